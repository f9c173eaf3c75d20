"""The composition root of `tether acp`: the config file and the environment made into the
agent's dependencies (the model catalog, the tools the `[web]` table enables with their guidance
in the system prompt, `ctx.web`), served on a stream, and closed when the input ends."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.engine.sessions import EngineDeps
    from tether.engine.web.capability import WebCapability
    from tether.rpc.acp.agent import AcpAgent
    from tether.rpc.acp.fast_session import Prepared
    from tether.rpc.acp.handshake import Handshake
    from tether.rpc.acp.serve import ServeOptions
    from tether.schemas.web import WebConfig
    from tether.transports.streams import FramedStream

SPILL_DAYS = 7.0  # default age after which a session's spill files are removed


@dataclass
class Composed:
    deps: EngineDeps
    web: WebCapability
    spill_days: float = SPILL_DAYS

    async def aclose(self) -> None:
        """The providers' HTTP clients and web access, closed once the agent has stopped."""
        await self.deps.catalog.aclose()
        await self.web.aclose()


def compose(
    options: ServeOptions, env: Mapping[str, str] | None = None, home: Path | None = None
) -> Composed:
    """`home`: where the store and spill files go (default: the data dir)."""
    from tether.engine.config.load import catalog_for, log_warnings
    from tether.engine.config.resolve import load_setup
    from tether.engine.registry import Registry
    from tether.engine.sessions import EngineDeps
    from tether.engine.store import Store
    from tether.engine.system_prompt import PERSONA
    from tether.engine.turn import TurnConfig
    from tether.engine.web.build import build_web
    from tether.paths import data_dir
    from tether.tools import catalog as tool_catalog

    env = os.environ if env is None else env
    home = data_dir() if home is None else home
    setup = load_setup(env)  # a broken file is logged and left out
    catalog = catalog_for(setup, script=options.script, model_override=options.model, env=env)
    log_warnings(catalog)
    tools = tool_catalog(setup.web)
    web = build_web(setup.web, env)
    deps = EngineDeps(
        catalog=catalog,
        registry_factory=lambda: Registry(tools),
        store=Store(home / "tether.db"),
        spill_root=home / "spill",
        turn=TurnConfig(system=PERSONA, sections=_web_sections(setup.web)),
        web=web,
    )
    days = float(env.get("TETHER_SPILL_DAYS") or setup.spill_days or SPILL_DAYS)
    return Composed(deps, web, days)


def _web_sections(web: WebConfig) -> tuple[str, ...]:
    from tether.tools.web import web_guidance

    guidance = web_guidance(web)
    return (f"# Web\n{guidance}",) if guidance else ()


async def serve_composed(
    stream: FramedStream,
    handshake: Handshake,
    composed: Composed,
    prepared: list[Prepared] | None = None,
    options: ServeOptions | None = None,
) -> None:
    """Serve the agent on a framed stream until its input ends, then close what it opened.
    `prepared`: sessions already answered before the event loop, created here before any later
    frame is read; `options`: when given, the answer a fresh session gets is cached for the
    next start (fast_session.py)."""
    import anyio

    from tether.rpc.acp.agent import AcpAgent
    from tether.rpc.peer import Peer

    peer = Peer(stream, name="acp")
    async with anyio.create_task_group() as tg:
        agent = AcpAgent(peer, handshake, composed.deps, background=tg)
        agent.register()
        for p in prepared or []:
            await agent.adopt(p)
        if options is not None:
            tg.start_soon(_remember_fresh_answer, agent, options)
        # After the agent's own shutdown (turns, MCP servers, the store):
        peer.on_close.append(composed.aclose)
        tg.start_soon(_expire_spill, composed.deps.spill_root, composed.spill_days)
        await peer.run()
        tg.cancel_scope.cancel()


async def _remember_fresh_answer(agent: AcpAgent, options: ServeOptions) -> None:
    import anyio

    from tether.paths import data_dir
    from tether.rpc.acp import fast_session

    answer = agent.fresh_session_answer()
    key = fast_session.cache_key(options)
    home = str(data_dir())
    if fast_session.read_answer(home, key) != answer:
        await anyio.to_thread.run_sync(fast_session.write_answer, home, key, answer)


async def _expire_spill(root: Path, days: float) -> None:
    """Spill directories of sessions untouched for `days` are removed, in the background."""
    import anyio

    from tether.engine.private import expire

    await anyio.to_thread.run_sync(expire, root, days)
