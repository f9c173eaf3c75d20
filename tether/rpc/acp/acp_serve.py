"""`tether acp`: serve the ACP agent on stdio.

The first `initialize` is answered before the event loop, the engine and the provider stack are
imported (tether/rpc/startup.py): editors wait on that answer at startup. So is the first plain
`session/new` when the answer for this configuration is cached (fast_session.py), while the
engine's modules load on a thread. Then the agent is served on the stream (acp_stream.py).
"""

from __future__ import annotations

from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.startup import TYPE_CHECKING, ServeOptions, preload, serve_on_stdio
from tether.transports.framing import make_framer

if TYPE_CHECKING:
    import logging
    from typing import Any

    from tether.rpc.acp.fast_session import Prepared
    from tether.transports.framing import Frame, Framer
    from tether.transports.streams import FramedStream


class _AcpStartup:
    """The ACP front's part of serving on stdio (rpc/startup.py does the rest)."""

    name = "acp"

    def __init__(self) -> None:
        self.handshake = Handshake()
        self.prepared: list[Prepared] = []  # sessions answered before the loop
        self._cached: dict[str, Any] | None = None  # the cached fresh-session answer

    def framer(self, options: ServeOptions) -> Framer:
        return make_framer(options.framing, options.max_frame)

    def preload(self) -> None:
        preload("tether.rpc.acp.acp_stream", "tether.rpc.acp.agent")

    def before_preload(self, opts: ServeOptions) -> None:
        from tether.rpc.acp.fast_session import cached_answer

        self._cached = cached_answer(opts)  # read now: answering from it then takes no imports

    def after_initialize(
        self, in_fd: int, out_fd: int, framer: Framer, frames: list[Frame], opts: ServeOptions
    ) -> list[Frame]:
        if not self.handshake.done:
            return frames
        from tether.rpc.acp.fast_session import answer_first

        frames, self.prepared = answer_first(in_fd, out_fd, framer, frames, self._cached)
        return frames

    def logging_started(self, log: logging.Logger) -> None:
        for p in self.prepared:
            log.info("answered session/new (%s) before the engine loaded", p.session_id)

    async def serve(self, stream: FramedStream, options: ServeOptions) -> int:
        import logging

        from tether.rpc.acp.acp_stream import serve_stream

        await serve_stream(stream, self.handshake, options, self.prepared)
        logging.getLogger("tether.acp").info("input ended; exiting")
        return 0


def serve_stdio(options: ServeOptions) -> int:
    return serve_on_stdio(_AcpStartup(), options)
