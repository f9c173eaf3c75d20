"""The documents the client has open (`didOpen` / `didChange` / `didClose`, kept by pygls's
workspace) found by file path, and the new files we created through the client that it does not
report on.

A file created with `workspace/applyEdit` (a `create` operation, then the text inserted) sits in
an editor buffer that the client may not sync to us; until the client opens it to us or the
file on disk changes (the user saved it), reads see the text we wrote, not the empty file the
client created on disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

Stamp = tuple[int, int] | None


@dataclass(frozen=True)
class Created:
    content: str
    stamp: Stamp  # the file on disk right after the client created it


class Documents:
    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._changed = anyio.Event()
        self._paths: dict[str, str | None] = {}  # uri -> real path (None: not a file URI)
        self._created: dict[Path, Created] = {}

    def changed(self, uri: str) -> None:
        """The client opened, changed or closed `uri` (pygls has already applied it)."""
        self._paths.pop(uri, None)
        path = self._real(uri)
        if path is not None:
            self._created.pop(Path(path), None)  # the client reports on it now
        self._changed.set()
        self._changed = anyio.Event()

    def find(self, path: Path) -> TextDocument | None:
        """The open document of `path`, by its real path (a symlinked URI matches too)."""
        want = os.path.realpath(path)
        for uri, doc in self._server.workspace.text_documents.items():
            if self._real(uri) == want:
                return doc
        return None

    def _real(self, uri: str) -> str | None:
        if uri not in self._paths:
            fs_path = to_fs_path(uri) if uri.startswith("file:") else None
            self._paths[uri] = os.path.realpath(fs_path) if fs_path else None
        return self._paths[uri]

    async def wait_change(self, uri: str, version: int | None, timeout: float) -> bool:
        """Wait until the client reports `uri` past `version` (or closed); False on timeout."""
        with anyio.move_on_after(timeout):
            while True:
                event = self._changed
                doc = self._server.workspace.text_documents.get(uri)
                if doc is None or (doc.version or 0) > (version or 0):
                    return True
                await event.wait()
        return False

    # --- files created through the client ---------------------------------------------------

    def remember_created(self, path: Path, content: str, stamp: Stamp) -> None:
        self._created[path] = Created(content, stamp)

    def created(self, path: Path, stamp_now: Stamp) -> str | None:
        """The text we created `path` with, while the file on disk is as the client left it."""
        entry = self._created.get(path)
        if entry is None:
            return None
        if entry.stamp != stamp_now:  # saved, or changed by someone else: the disk knows
            del self._created[path]
            return None
        return entry.content

    def forget(self, path: Path) -> None:
        """`path` was written, moved or deleted on disk by us."""
        for p in list(self._created):
            if p == path or path in p.parents:
                del self._created[p]
