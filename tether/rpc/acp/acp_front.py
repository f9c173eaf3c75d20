"""The Front the engine talks to over ACP: each engine event as `session/update`s (through the
one translator), another window's turns replayed, and a session's capability seam built from
what the client offers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.engine import events as ev
from tether.engine.providers.base import LLM
from tether.engine.seam import Capabilities, Web
from tether.engine.sessions.deps import EngineDeps
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.state import Session
from tether.rpc.acp import options
from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.acp.capabilities import acp_capabilities
from tether.rpc.acp.replay_frames import replay_updates, update_params
from tether.rpc.acp.translate import to_updates
from tether.rpc.peer import Peer
from tether.schemas import acp

if TYPE_CHECKING:
    from tether.engine.sessions.manager import SessionManager


class AcpFront:
    def __init__(self, peer: Peer, handshake: Handshake, deps: EngineDeps) -> None:
        self.peer = peer
        self.handshake = handshake
        self.deps = deps
        self.manager: SessionManager  # set by the agent, which makes the manager with this front
        self._web: Web | None = None

    async def show(self, session_id: str, event: ev.Event) -> None:
        for update in to_updates(event, notices=self.handshake.notices):
            await self.send(session_id, update)

    async def catch_up(self, session_id: str, replay: Replay) -> None:
        updates = replay_updates(replay, [], notices=self.handshake.notices)
        await self.peer.notify_all("session/update", updates, update_params(session_id))

    def capabilities(self, session: Session, model: LLM) -> Capabilities:
        if self._web is None:  # one per process
            self._web = self.deps.web or _built_web()
        configured = self.deps.catalog.path_denylist
        denylist = configured if configured is not None else self.deps.path_denylist
        return acp_capabilities(
            self.peer,
            self.handshake,
            session,
            model,
            self.deps.spill_root,
            self._web,
            denylist,
            self.manager.runtime(session.id).pty_host(self.deps.agent),
            self.deps.command_denylist,
            self.manager.sandbox(session),
            self.manager.runtime(session.id).repositories,
            self.deps.allowed_paths,
            trash=self.deps.trash,
        )

    async def send(self, session_id: str, update: acp.SessionUpdate) -> None:
        await self.peer.notify(
            "session/update", acp.SessionNotification(session_id=session_id, update=update)
        )

    async def send_options(self, s: Session) -> None:
        opts = options.config_options(s, self.deps.catalog, self.manager.settings.network(s))
        await self.send(s.id, acp.ConfigOptionUpdate(config_options=opts))


def _built_web() -> Web:
    """`ctx.web` from the environment alone (deps without one: tests' and embedders')."""
    from tether.engine.web.build import build_web

    return build_web()
