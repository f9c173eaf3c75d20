"""The one session of an LSP connection: created when the first prompt arrives, in the workspace
the client named in `initialize`, with the settings its `initializationOptions` give. A normal
stored tether session: `tether sessions list` shows it."""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from tether.engine.sessions.manager import SessionManager
from tether.engine.sessions.settings import InvalidSetting
from tether.engine.sessions.state import Session
from tether.rpc.lsp.lsp_messages import MESSAGE, RESULT, say
from tether.rpc.lsp.wire import Connection


class ConnectionSession:
    def __init__(self, conn: Connection, manager: SessionManager) -> None:
        self.conn = conn
        self.manager = manager
        self._session: Session | None = None

    async def ensure(self) -> Session:
        """The connection's session, created on first use."""
        if self._session is None:
            params = self.conn.handshake.params or {}
            cwd, roots = workspace_dirs(params)
            self._session = s = await self.manager.new(cwd, [], roots)
            self.manager.start_mcp(s, [], ready_notices=True)  # the config file's servers
            await self._apply_options(s, params.get("initializationOptions"))
        return self._session

    async def _apply_options(self, s: Session, options: object) -> None:
        """`initializationOptions` `{"mode", "model", "approvals", "always", "network"}`: the
        session's settings (clients that cannot send slash commands or show menus set them in
        their config)."""
        if not isinstance(options, dict):
            return
        setters = {
            "mode": self.manager.settings.set_mode,
            "model": self.manager.settings.set_model,
            "approvals": self.manager.settings.set_approvals,
            "always": self.manager.settings.set_always,
            "network": self.manager.settings.set_network,
        }
        answer = options.get("answer")
        if answer is not None and answer not in (RESULT, MESSAGE):
            message = (
                f"tether: initializationOptions.answer: must be {RESULT!r} or {MESSAGE!r}, "
                f"got {answer!r}"
            )
            say(self.conn, types.MessageType.Warning, message)
        for key, setter in setters.items():
            value = options.get(key)
            if value is None:
                continue
            try:
                if not isinstance(value, str):
                    raise InvalidSetting(f"{key} must be a string, got {value!r}")
                await setter(s, value)
            except InvalidSetting as exc:
                message = f"tether: initializationOptions.{key}: {exc}"
                params = types.ShowMessageParams(type=types.MessageType.Warning, message=message)
                self.conn.notify(types.WINDOW_SHOW_MESSAGE, params)


def workspace_dirs(params: dict[str, Any]) -> tuple[str, list[str]]:
    """The session's cwd and roots: the client's workspace folders (the first is the cwd), else
    its root, else the directory the server was started in."""
    folders = params.get("workspaceFolders") or []
    roots = [p for p in (_dir_of(f.get("uri")) for f in folders) if p is not None]
    root = _dir_of(params.get("rootUri")) or _dir_of_path(params.get("rootPath"))
    cwd = roots[0] if roots else root or os.getcwd()
    return cwd, roots or [cwd]


def _dir_of(uri: object) -> str | None:
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None
    return _dir_of_path(to_fs_path(uri))


def _dir_of_path(path: object) -> str | None:
    if isinstance(path, str) and os.path.isabs(path) and os.path.isdir(path):
        return os.path.normpath(path)
    return None
