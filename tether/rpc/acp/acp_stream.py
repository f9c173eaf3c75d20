"""The ACP agent served on a framed stream (stdio, or any other), on the composition every
front shares (tether/rpc/compose.py), until its input ends; then what it opened is closed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.rpc.acp.acp_handshake import Handshake
    from tether.rpc.acp.agent import AcpAgent
    from tether.rpc.acp.fast_session import Prepared
    from tether.rpc.compose import Composed
    from tether.rpc.startup import ServeOptions
    from tether.transports.streams import FramedStream


async def serve_stream(
    stream: FramedStream,
    handshake: Handshake,
    options: ServeOptions,
    prepared: list[Prepared] | None = None,
) -> None:
    """Serve the agent on a framed stream until its input ends."""
    from tether.rpc.acp.replay_frames import acp_renderer
    from tether.rpc.compose import compose

    composed = compose(options, acp_renderer())
    await serve_composed(stream, handshake, composed, prepared or [], options)


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
    from tether.rpc.compose import expire_spill
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
        tg.start_soon(expire_spill, composed.deps.spill_root, composed.spill_days)
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
