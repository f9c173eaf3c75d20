"""What an open session holds beyond its stored state, as one object: its model, its tools, its
MCP servers, its interactive programs, its sandbox, and what to close with it."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from tether.engine import events as ev
from tether.engine.config.catalog import ModelCatalog
from tether.engine.local.pty_host import PtyHost
from tether.engine.providers.base import LLM
from tether.engine.registry import Registry, ToolDef
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.sessions.state import Session
from tether.engine.vcs.repository import Repositories
from tether.errors import ToolError
from tether.schemas.config import AgentConfig

if TYPE_CHECKING:
    from tether.engine.mcp.host import Listener, McpHost
    from tether.engine.mcp.spec import ServerSpec

log = logging.getLogger("tether.sessions")

Closer = Callable[[], Awaitable[None]]


class SessionRuntime:
    """One open session: the session and everything running for it."""

    def __init__(self, session: Session, registry_factory: Callable[[], Registry]) -> None:
        self.session = session
        self.llm: LLM | None = None  # opened at the first request; dropped when the model changes
        self.mcp: McpHost | None = None
        self.snapshot = anyio.Lock()  # the project snapshot is taken once, whoever asks first
        # The repository of each root as found when the session opened: all tether's own git
        # (snapshot, the look before a confined command, the vcs tools) runs on those.
        self.repositories = Repositories()
        self._registry_factory = registry_factory
        self._registry: Registry | None = None
        self._ptys: PtyHost | None = None
        self._sandbox: Sandbox | None = None
        self._closers: list[Closer] = []
        self._mcp_listeners: list[Listener] = []
        # Opened from the store by this process (not made here): its next turn tells the model
        # what the process that ran it before took with it (sessions/reopening.py).
        self.reopened = False

    def model(self, catalog: ModelCatalog) -> LLM:
        """The session's model, opened at the first request (again after the model changed;
        it may be opened on a thread as the session opens)."""
        llm = self.llm
        if llm is None or llm.info.id != self.session.state.model:
            llm = self.llm = catalog.open(self.session.state.model)
        return llm

    def registry(self) -> Registry:
        """The session's tools: the built-in ones, and its MCP servers' while they are up."""
        if self._registry is None:
            self._registry = self._registry_factory()
            self._registry.include(self._mcp_tools)
            self._registry.explain(self._mcp_gone)
        return self._registry

    def _mcp_tools(self) -> list[ToolDef]:
        return self.mcp.tools() if self.mcp is not None else []

    def _mcp_gone(self, name: str) -> ToolError | None:
        return self.mcp.gone(name) if self.mcp is not None else None

    def on_mcp_change(self, listener: Listener) -> None:
        """Call `listener` whenever one of the session's MCP servers changes state, tools or
        prompts (its prompts are commands: a front offers its commands again). It may be
        given before the servers start."""
        self._mcp_listeners.append(listener)
        if self.mcp is not None:
            self.mcp.listen(listener)

    def pty_host(self, limits: AgentConfig | None = None) -> PtyHost:
        """The session's interactive programs; killed when it closes (and at exit). `limits`:
        `[agent]`'s PTY limits, taken when the host is made (the first call)."""
        if self._ptys is None:
            agent = limits or AgentConfig()
            self._ptys = PtyHost(
                limit=agent.max_ptys,
                output_budget=agent.pty_output_budget,
                auto_raise=agent.auto_continue_limits,
            )
            self._closers.append(self._ptys.close_all)
        return self._ptys

    def sandbox(self, mechanism: str, hidden: list[Path], network: bool) -> Sandbox:
        """What confines the session's commands; its private temp directory goes with it."""
        if self._sandbox is None:
            found = functools.partial(detect, mechanism)  # probed when a command needs it
            sandbox = Sandbox(found, hidden=hidden, repositories=self.repositories)
            self._sandbox = sandbox

            async def close() -> None:
                await anyio.to_thread.run_sync(sandbox.close)

            self._closers.append(close)
        self._sandbox.network = network
        return self._sandbox

    def start_mcp(
        self,
        servers: list[ServerSpec],
        background: anyio.abc.TaskGroup,
        notify: Callable[[ev.Notice], Awaitable[None]],
        *,
        ready_notices: bool,
    ) -> None:
        """Connect these MCP servers in the background (once while the session is open)."""
        if self.mcp is not None or not servers:
            return
        from tether.engine.mcp.host import McpHost

        self.mcp = McpHost(
            servers, cwd=Path(self.session.cwd), notify=notify, ready_notices=ready_notices
        )
        for listener in self._mcp_listeners:
            self.mcp.listen(listener)
        self._closers.append(self.mcp.aclose)
        self.mcp.start(background)

    def on_close(self, closer: Closer) -> None:
        """Run `closer` when the session closes (its processes, PTYs, servers)."""
        self._closers.append(closer)

    async def aclose(self) -> None:
        """Stop the session's turn and everything it runs (newest first); its record stays."""
        self.session.cancel_turn()
        with anyio.CancelScope(shield=True):
            for closer in reversed(self._closers):
                try:
                    await closer()
                except Exception:
                    log.exception("closing session %s", self.session.id)
