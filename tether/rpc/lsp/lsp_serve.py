"""`tether lsp`: serve the agent as a language server on stdio (Content-Length frames).

The first `initialize` is answered before the event loop, pygls, lsprotocol and the engine are
imported (tether/rpc/startup.py; pygls and lsprotocol alone take a few hundred milliseconds);
pygls then starts on the same stream with the bytes already read (lsp_stream.py).
"""

from __future__ import annotations

from tether.rpc.lsp.lsp_handshake import LspHandshake
from tether.rpc.startup import TYPE_CHECKING, ServeOptions, preload, serve_on_stdio
from tether.transports.framing import ContentLengthFramer

if TYPE_CHECKING:
    import logging

    from tether.transports.framing import Frame, Framer
    from tether.transports.streams import FramedStream

_ANSWERED = ("Exception occurred for message", "Unable to deserialize message", "Failed to handle")


class _LspStartup:
    """The LSP front's part of serving on stdio (rpc/startup.py does the rest)."""

    name = "lsp"

    def __init__(self) -> None:
        self.handshake = LspHandshake()

    def framer(self, options: ServeOptions) -> ContentLengthFramer:
        return ContentLengthFramer(options.max_frame)

    def preload(self) -> None:
        preload("tether.rpc.lsp.lsp_stream", "tether.rpc.lsp.front")

    def before_preload(self, opts: ServeOptions) -> None:
        return None  # nothing is answered before pygls

    def after_initialize(
        self,
        in_fd: int,
        out_fd: int,
        framer: Framer,
        frames: list[Frame],
        opts: ServeOptions,
    ) -> list[Frame]:
        return frames  # whatever comes next is pygls's to answer

    def logging_started(self, log: logging.Logger) -> None:
        import logging

        if logging.getLogger().level > logging.DEBUG:  # pygls logs every frame at INFO
            logging.getLogger("pygls").setLevel(logging.WARNING)
        for name in ("pygls.protocol.json_rpc", "pygls.protocol.language_server"):
            logging.getLogger(name).addFilter(_answered_elsewhere)

    async def serve(self, stream: FramedStream, options: ServeOptions) -> int:
        from tether.rpc.lsp.lsp_stream import serve_stream

        return await serve_stream(stream, self.handshake, options)


def serve_stdio(options: ServeOptions) -> int:
    return serve_on_stdio(_LspStartup(), options)


def _answered_elsewhere(record: object) -> bool:
    """pygls logs a traceback for every error it answers; the answer says what was wrong."""
    message = getattr(record, "msg", "")
    return not (isinstance(message, str) and message.startswith(_ANSWERED))
