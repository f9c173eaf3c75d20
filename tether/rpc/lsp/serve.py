"""`tether lsp`: serve the agent as a language server on stdio (Content-Length frames).

The first `initialize` is answered synchronously, before the event loop, pygls, lsprotocol and
the engine are imported (pygls and lsprotocol alone take a few hundred milliseconds); pygls then
starts on the same stream with the bytes already read.
"""

from __future__ import annotations

import os

from tether.transports.framing import MAX_FRAME_BYTES, ContentLengthFramer

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    from tether.rpc.compose import Composed
    from tether.rpc.lsp.handshake import LspHandshake
    from tether.transports.framing import Frame
    from tether.transports.streams import FramedStream


class LspOptions:
    """How `tether lsp` serves (a plain class: dataclasses cost startup time)."""

    def __init__(
        self,
        script: str | None = None,
        model: str | None = None,
        log_level: str | None = None,
        max_frame: int = MAX_FRAME_BYTES,
    ) -> None:
        self.script = script  # a scripted-provider file: the default model when given
        self.model = model  # "provider:model": the default model, over TETHER_MODEL
        self.log_level = log_level  # None: TETHER_LOG_LEVEL, else INFO (tether/logs.py)
        self.max_frame = max_frame


def serve_stdio(options: LspOptions) -> int:
    if not os.isatty(0):
        # A client's Ctrl-C reaches its whole process group; `exit` or the end of input is what
        # stops a language server. (Run by hand on a terminal, Ctrl-C does stop it.)
        import signal

        signal.signal(signal.SIGINT, _no_op)
    try:
        return _serve_stdio(options)
    except KeyboardInterrupt:
        return 130


def _no_op(signum: int, frame: object) -> None:
    pass


def _serve_stdio(options: LspOptions) -> int:
    from tether.rpc.lsp.handshake import LspHandshake
    from tether.transports.stdio_fds import claim_stdio

    in_fd, out_fd = claim_stdio()
    framer = ContentLengthFramer(options.max_frame)
    handshake = LspHandshake()
    frames = _fast_initialize(in_fd, out_fd, framer, handshake)
    if frames is None:
        return 0  # input ended before anything arrived
    _start_logging(options)
    import anyio

    return anyio.run(_serve_async, in_fd, out_fd, framer, frames, handshake, options)


def _start_logging(options: LspOptions) -> None:
    import logging

    from tether import __version__
    from tether.logs import setup_logging

    path = setup_logging("lsp", options.log_level)
    if logging.getLogger().level > logging.DEBUG:  # pygls logs every frame at INFO
        logging.getLogger("pygls").setLevel(logging.WARNING)
    for name in ("pygls.protocol.json_rpc", "pygls.protocol.language_server"):
        logging.getLogger(name).addFilter(_answered_elsewhere)
    logging.getLogger("tether.lsp").info(
        "tether %s serving LSP on stdio; log file %s", __version__, path
    )


_ANSWERED = ("Exception occurred for message", "Unable to deserialize message", "Failed to handle")


def _answered_elsewhere(record: object) -> bool:
    """pygls logs a traceback for every error it answers; the answer says what was wrong."""
    message = getattr(record, "msg", "")
    return not (isinstance(message, str) and message.startswith(_ANSWERED))


def _fast_initialize(
    in_fd: int, out_fd: int, framer: ContentLengthFramer, handshake: LspHandshake
) -> list[Frame] | None:
    """Read until the first frame; answer it here when it is a clean `initialize`. Returns the
    frames still to serve, or None at end of input."""
    frames: list[Frame] = []
    while not frames:
        chunk = os.read(in_fd, 1 << 16)
        if not chunk:
            frames = framer.finish()
            if not frames:
                return None
            break
        frames = framer.feed(chunk)
    first = frames[0]
    if not isinstance(first, bytes) or b'"initialize"' not in first:
        return frames
    from tether.rpc.lsp.handshake import fast_answer

    clean = fast_answer(first)
    if clean is None:
        return frames
    import json

    rid, params = clean
    reply = {"jsonrpc": "2.0", "id": rid, "result": handshake.answer(params)}
    data = framer.encode(json.dumps(reply, separators=(",", ":")).encode())
    while data:
        data = data[os.write(out_fd, data) :]
    return frames[1:]


async def _serve_async(
    in_fd: int,
    out_fd: int,
    framer: ContentLengthFramer,
    frames: list[Frame],
    handshake: LspHandshake,
    options: LspOptions,
) -> int:
    from tether.engine.local import reaper
    from tether.transports.stdio import StdioStream
    from tether.transports.streams import FramedStream

    reaper.install()  # what tether started ends with it, whatever ends tether
    stream = FramedStream(StdioStream(in_fd, out_fd), framer)
    stream.push_frames(frames)
    return await serve_stream(stream, handshake, options)


async def serve_stream(
    stream: FramedStream,
    handshake: LspHandshake,
    options: LspOptions,
    composed: Composed | None = None,
) -> int:
    """Serve the language server on a framed stream until `exit` or the end of input, then
    close what it opened; returns the exit code (1 for an `exit` without `shutdown`, as LSP
    asks)."""
    import anyio

    from tether.rpc.compose import compose, expire_spill
    from tether.rpc.lsp.front import LspFront
    from tether.rpc.lsp.server import make_server, register
    from tether.rpc.lsp.wire import Connection

    composed = composed or compose(options.script, options.model)
    server, converter = make_server()
    conn = Connection(stream, server, handshake, converter)
    code = 0
    async with anyio.create_task_group() as tg:
        front = LspFront(conn, server, composed.deps, tg)
        register(server, front)
        conn.hooks = front
        tg.start_soon(expire_spill, composed.deps.spill_root, composed.spill_days)
        try:
            code = await conn.run()
        finally:
            tg.cancel_scope.cancel()
            with anyio.CancelScope(shield=True):
                await front.manager.shutdown()  # turns, MCP servers, PTYs, the store
                await composed.aclose()
    return code
