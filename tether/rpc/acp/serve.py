"""`tether acp`: serve the ACP agent on stdio (or any byte stream).

The first `initialize` is answered synchronously, before the event loop, the engine and the
provider stack are imported: editors wait on that answer at startup. So is the first plain
`session/new` when the answer for this configuration is cached (fast_session.py), while the
engine's modules load on a thread.
"""

from __future__ import annotations

import os

from tether.transports.framing import MAX_FRAME_BYTES, make_framer

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    import logging

    from tether.rpc.acp.fast_session import Prepared
    from tether.rpc.acp.handshake import Handshake
    from tether.transports.framing import Frame, Framer, FramingName
    from tether.transports.streams import FramedStream


class ServeOptions:
    """How `tether acp` serves (a plain class: dataclasses cost startup time)."""

    def __init__(
        self,
        framing: FramingName = "auto",
        script: str | None = None,
        max_frame: int = MAX_FRAME_BYTES,
        log_level: str | None = None,
        model: str | None = None,
    ) -> None:
        self.framing: FramingName = framing
        self.script = script  # a scripted-provider file: the default model when given
        self.max_frame = max_frame
        self.log_level = log_level  # None: TETHER_LOG_LEVEL, else INFO (tether/logs.py)
        self.model = model  # "provider:model": the default model, over TETHER_MODEL and --script


def serve_stdio(options: ServeOptions) -> int:
    if not os.isatty(0):
        _ignore_interrupts()
    try:
        return _serve_stdio(options)
    except KeyboardInterrupt:  # run by hand on a terminal: Ctrl-C stops it, quietly
        return 130


def _serve_stdio(options: ServeOptions) -> int:
    from tether.transports.stdio_fds import claim_stdio

    in_fd, out_fd = claim_stdio()
    framer = make_framer(options.framing, options.max_frame)
    from tether.rpc.acp.handshake import Handshake

    handshake = Handshake()
    frames = _fast_initialize(in_fd, out_fd, framer, handshake)
    if frames is None:
        return 0  # input ended before anything arrived
    prepared: list[Prepared] = []
    if handshake.done:
        frames, prepared = _fast_first_session(in_fd, out_fd, framer, frames, options)
    _start_logging(options)
    for p in prepared:
        _log().info("answered session/new (%s) before the engine loaded", p.session_id)
    import anyio

    code = anyio.run(_serve_async, in_fd, out_fd, framer, frames, handshake, options, prepared)
    _log().info("input ended; exiting")
    return code


def _ignore_interrupts() -> None:
    """Ctrl-C in a terminal signals the whole foreground process group, so this server too when
    a client such as `tether ask` runs it there; the client's `session/cancel` is what stops a
    turn. (Run by hand, with the terminal as its input, Ctrl-C does stop it.) A no-op handler
    rather than SIG_IGN: the commands tether runs get the default action back at exec, where an
    ignored SIGINT would be inherited."""
    import signal

    signal.signal(signal.SIGINT, _no_op)


def _no_op(signum: int, frame: object) -> None:
    pass


def _start_logging(options: ServeOptions) -> None:
    from tether import __version__
    from tether.logs import setup_logging

    path = setup_logging("acp", options.log_level)
    _log().info("tether %s serving ACP on stdio; log file %s", __version__, path)


def _log() -> logging.Logger:
    import logging

    return logging.getLogger("tether.acp")


def _fast_initialize(
    in_fd: int, out_fd: int, framer: Framer, handshake: Handshake
) -> list[Frame] | None:
    """Read until the first frame; answer it here when it is a well-formed `initialize`.
    Returns the frames still to serve, or None at end of input."""
    frames = _read_frames(in_fd, framer)
    if not frames:
        return None
    answer = _answer_initialize(frames[0], handshake)
    if answer is None:
        return frames
    _write_all(out_fd, framer.encode(answer))
    return frames[1:]


def _fast_first_session(
    in_fd: int, out_fd: int, framer: Framer, frames: list[Frame], options: ServeOptions
) -> tuple[list[Frame], list[Prepared]]:
    """Answer the first `session/new` here too when the cached answer for this configuration
    is there (see fast_session.py); meanwhile the engine's modules load on a thread."""
    from tether.paths import data_dir
    from tether.rpc.acp import fast_session

    home = str(data_dir())
    cached = fast_session.read_answer(home, fast_session.cache_key(options))
    if cached is None:
        return frames, []
    import threading

    threading.Thread(target=_preload, name="tether-preload", daemon=True).start()
    frames = frames or _read_frames(in_fd, framer)
    first = frames[0] if frames else None
    reply = fast_session.answer(first, cached) if isinstance(first, bytes) else None
    if reply is None:
        return frames, []
    data, prepared = reply
    _write_all(out_fd, framer.encode(data))
    return frames[1:], [prepared]


def _preload() -> None:
    """Import what serving needs while the main thread waits for the client (imports release
    nothing they hold twice: a module the main thread needs next is simply already there)."""


def _read_frames(in_fd: int, framer: Framer) -> list[Frame]:
    """Block until at least one frame arrived; [] at the end of input."""
    frames: list[Frame] = []
    while not frames:
        chunk = os.read(in_fd, 1 << 16)
        if not chunk:
            return framer.finish()
        frames = framer.feed(chunk)
    return frames


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _answer_initialize(frame: Frame, handshake: Handshake) -> bytes | None:
    if not isinstance(frame, bytes) or b'"initialize"' not in frame:
        return None
    import json

    from tether.rpc.acp.handshake import fast_answer

    clean = fast_answer(frame)
    if clean is None:
        return None
    rid, params = clean
    reply = {"jsonrpc": "2.0", "id": rid, "result": handshake.answer(params)}
    return json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode()


async def _serve_async(
    in_fd: int,
    out_fd: int,
    framer: Framer,
    frames: list[Frame],
    handshake: Handshake,
    options: ServeOptions,
    prepared: list[Prepared],
) -> int:
    from tether.engine.local import reaper
    from tether.transports.stdio import StdioStream
    from tether.transports.streams import FramedStream

    reaper.install()  # what tether started ends with it, whatever ends tether
    stream = FramedStream(StdioStream(in_fd, out_fd), framer)
    stream.push_frames(frames)
    await serve_stream(stream, handshake, options, prepared)
    return 0


async def serve_stream(
    stream: FramedStream,
    handshake: Handshake,
    options: ServeOptions,
    prepared: list[Prepared] | None = None,
) -> None:
    """Serve the agent on a framed stream until its input ends."""
    from tether.rpc.acp.compose import compose, serve_composed

    await serve_composed(stream, handshake, compose(options), prepared or [], options)
