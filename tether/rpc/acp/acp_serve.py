"""`tether acp`: serve the ACP agent on stdio (or any byte stream), on the composition every
front shares (tether/rpc/compose.py), and close what it opened when the input ends.

The first `initialize` is answered before the event loop, the engine and the provider stack are
imported (tether/rpc/startup.py): editors wait on that answer at startup. So is the first plain
`session/new` when the answer for this configuration is cached (fast_session.py), while the
engine's modules load on a thread.
"""

from __future__ import annotations

from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.startup import TYPE_CHECKING, ServeOptions, serve_on_stdio
from tether.transports.framing import make_framer

if TYPE_CHECKING:
    import logging

    from tether.rpc.acp.agent import AcpAgent
    from tether.rpc.acp.fast_session import Prepared
    from tether.rpc.compose import Composed
    from tether.transports.framing import Frame, Framer
    from tether.transports.streams import FramedStream


class _AcpStartup:
    """The ACP front's part of serving on stdio (rpc/startup.py does the rest)."""

    name = "acp"

    def __init__(self) -> None:
        self.handshake = Handshake()
        self.prepared: list[Prepared] = []  # sessions answered before the loop

    def framer(self, options: ServeOptions) -> Framer:
        return make_framer(options.framing, options.max_frame)

    def after_initialize(
        self, in_fd: int, out_fd: int, framer: Framer, frames: list[Frame], opts: ServeOptions
    ) -> list[Frame]:
        if not self.handshake.done:
            return frames
        from tether.rpc.acp.fast_session import answer_first

        frames, self.prepared = answer_first(in_fd, out_fd, framer, frames, opts)
        return frames

    def logging_started(self, log: logging.Logger) -> None:
        for p in self.prepared:
            log.info("answered session/new (%s) before the engine loaded", p.session_id)

    async def serve(self, stream: FramedStream, options: ServeOptions) -> int:
        import logging

        await serve_stream(stream, self.handshake, options, self.prepared)
        logging.getLogger("tether.acp").info("input ended; exiting")
        return 0


def serve_stdio(options: ServeOptions) -> int:
    return serve_on_stdio(_AcpStartup(), options)


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
