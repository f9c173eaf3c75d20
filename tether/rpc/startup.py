"""What `tether acp` and `tether lsp` do before their event loop: answer the first `initialize`
with plain json, let the front answer what it can next (ACP: the first plain `session/new`, from
a cached answer, in `rpc/acp/fast_session.py`), then hand the bytes already read to the event
loop. Each front brings its own part: its handshake, framer and what it serves once the loop runs
(`rpc/acp/acp_serve.py`, `rpc/lsp/lsp_serve.py`).

The lazy-import policy, for both fronts: editors wait on the `initialize` answer, so the modules
on the way to it (`tether.cli.main`, the warm-start launcher's `tether.warm.launcher` and
`handover`, this one, each front's `*_serve` and `*_handshake`, `tether.transports.framing`
and `stdio_fds`, `tether.rpc.json_depth`) import nothing at module level beyond the standard
library's lightest modules and each other, and stay small (without cached bytecode every line
of them is compiled first); all else (LOADED_AFTER_INITIALIZE, and whatever a front serves
with) is imported inside the functions that run after the answer. They name types for the
checker under the TYPE_CHECKING below.
"""

from __future__ import annotations

import os

from tether.transports.framing import MAX_FRAME_BYTES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    import logging
    import threading
    from collections.abc import Callable
    from typing import Any, Protocol

    from tether.transports.framing import Frame, Framer, FramingName
    from tether.transports.streams import FramedStream

    class FrontHandshake(Protocol):
        """A front's `initialize`: the params it accepts before the event loop, its answer."""

        @property
        def ensure_ascii(self) -> bool:
            """How the front's own JSON writer escapes: the answer here matches it."""
            ...

        @property
        def done(self) -> bool: ...

        def clean(self, params: object) -> dict[str, Any] | None: ...

        def answer(self, params: dict[str, Any]) -> dict[str, Any]: ...

    class Front(Protocol):
        """A front's own part of serving on stdio."""

        @property
        def name(self) -> str:
            """The front's log file and logger (`tether.<name>`): "acp" or "lsp"."""
            ...

        @property
        def handshake(self) -> FrontHandshake: ...

        def framer(self, options: ServeOptions) -> Framer: ...

        def preload(self) -> None:
            """Import what serving needs; run on a thread from the `initialize` answer on, so
            the engine loads while the client reads the answer and sends its next request."""
            ...

        def before_preload(self, opts: ServeOptions) -> None:
            """What `after_initialize` needs that no client frame decides, done before the
            engine's thread starts: the two share one interpreter lock, and the next answer
            should not wait on the engine's imports."""
            ...

        def after_initialize(
            self, in_fd: int, out_fd: int, framer: Framer, frames: list[Frame], opts: ServeOptions
        ) -> list[Frame]:
            """Answer what the front can before the loop; returns the frames still to serve."""
            ...

        def logging_started(self, log: logging.Logger) -> None: ...

        async def serve(self, stream: FramedStream, options: ServeOptions) -> int: ...


# Never loaded before the `initialize` answer (tests/rpc/test_startup_imports.py checks both
# fronts).
LOADED_AFTER_INITIALIZE = (
    "typing",
    "dataclasses",
    "asyncio",
    "anyio",
    "msgspec",
    "pygls",
    "lsprotocol",
    "cattrs",
    "tether.engine",
    "tether.schemas",
    "tether.tools",
)


class ServeOptions:
    """How a front serves (a plain class: dataclasses cost startup time)."""

    def __init__(
        self,
        framing: FramingName = "auto",
        script: str | None = None,
        max_frame: int = MAX_FRAME_BYTES,
        log_level: str | None = None,
        model: str | None = None,
    ) -> None:
        self.framing: FramingName = framing  # ACP's; LSP always frames with Content-Length
        self.script = script  # a scripted-provider file: the default model when given
        self.max_frame = max_frame
        self.log_level = log_level  # None: TETHER_LOG_LEVEL, else INFO (tether/logs.py)
        self.model = model  # "provider:model": the default model, over TETHER_MODEL and --script
        self.max_rounds: int | None = None  # --max-rounds: over [agent] max_rounds
        self.auto_continue = False  # --auto-continue: as [agent] auto_continue_limits = true
        self.max_retry_seconds: int | None = None  # over [agent] retry_max_total


# --- serving on stdio ---------------------------------------------------------------------------


def serve_on_stdio(front: Front, options: ServeOptions) -> int:
    if not os.isatty(0):
        _ignore_interrupts()
    try:
        return _serve_stdio(front, options)
    except KeyboardInterrupt:  # run by hand on a terminal: Ctrl-C stops it, quietly
        return 130


def _serve_stdio(front: Front, options: ServeOptions) -> int:
    from tether.transports.stdio_fds import claim_stdio

    in_fd, out_fd = claim_stdio()
    framer = front.framer(options)
    frames = _fast_initialize(in_fd, out_fd, framer, front.handshake)
    if frames is None:
        return 0  # input ended before anything arrived
    loading = _start_preload(front, options) if front.handshake.done else None
    frames = front.after_initialize(in_fd, out_fd, framer, frames, options)
    if loading is not None:
        # Everything from here on needs the engine: waiting for its thread, rather than
        # importing beside it, spares the two threads a race for the interpreter lock.
        loading.join()
    _start_logging(front, options)
    import anyio

    return anyio.run(_serve_async, front, in_fd, out_fd, framer, frames, options)


def _start_preload(front: Front, options: ServeOptions) -> threading.Thread:
    """The engine's modules, loaded on a thread while the front answers what it can."""
    import threading

    front.before_preload(options)
    thread = threading.Thread(target=front.preload, name="tether-preload", daemon=True)
    thread.start()
    return thread


def preload(*fronts: str) -> None:
    """What serving needs, imported in the order the main thread needs it, on the preload
    thread: the front's modules, the composition, the HTTP stack.
    A failure is the main thread's to meet (it imports the same modules, and says why).

    The cyclic garbage collector is off meanwhile: imports make hundreds of thousands of
    objects and hardly any garbage, and each full collection walked them all (about 7% of the
    import time). What was loaded is then frozen (never walked again), and collection resumes."""
    import gc
    import importlib

    gc.disable()
    try:
        for name in (*fronts, "tether.rpc.compose", "tether.tools"):
            importlib.import_module(name)
        from tether.engine.providers import http_transport

        http_transport.warm()  # the tools load when first called (tools/tool_specs.py)
    except Exception:
        pass
    finally:
        gc.freeze()
        gc.enable()


def _ignore_interrupts() -> None:
    """Ctrl-C in a terminal signals the whole foreground process group, so this server too when
    a client such as `tether ask` runs it there; the client's `session/cancel` (LSP: `exit` or
    the end of input) is what stops it. (Run by hand, with the terminal as its input, Ctrl-C
    does stop it.) A no-op handler rather than SIG_IGN: the commands tether runs get the
    default action back at exec, where an ignored SIGINT would be inherited."""
    import signal

    signal.signal(signal.SIGINT, _no_op)


def _no_op(signum: int, frame: object) -> None:
    pass


def _start_logging(front: Front, options: ServeOptions) -> None:
    import logging

    from tether import __version__
    from tether.logs import setup_logging

    path = setup_logging(front.name, options.log_level)
    log = logging.getLogger(f"tether.{front.name}")
    log.info(  # the parent: the editor, or for a warm start the warm server
        "tether %s serving %s on stdio; log file %s; parent process %d",
        __version__,
        front.name.upper(),
        path,
        os.getppid(),
    )
    front.logging_started(log)


async def _serve_async(
    front: Front,
    in_fd: int,
    out_fd: int,
    framer: Framer,
    frames: list[Frame],
    options: ServeOptions,
) -> int:
    from tether.engine.local import reaper
    from tether.transports.stdio import StdioStream
    from tether.transports.streams import FramedStream

    reaper.install()  # what tether started ends with it, whatever ends tether
    stream = FramedStream(StdioStream(in_fd, out_fd), framer)
    stream.push_frames(frames)
    return await front.serve(stream, options)


def read_frames(in_fd: int, framer: Framer) -> list[Frame]:
    """Block until at least one frame arrived; [] at the end of input."""
    frames: list[Frame] = []
    while not frames:
        chunk = os.read(in_fd, 1 << 16)
        if not chunk:
            return framer.finish()
        frames = framer.feed(chunk)
    return frames


def write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


# --- the first `initialize` ---------------------------------------------------------------------


def _fast_initialize(
    in_fd: int, out_fd: int, framer: Framer, handshake: FrontHandshake
) -> list[Frame] | None:
    """Read until the first frame; answer it here when it is a clean `initialize`. Returns the
    frames still to serve, or None at end of input."""
    frames = read_frames(in_fd, framer)
    if not frames:
        return None
    reply = _initialize_reply(frames[0], handshake)
    if reply is None:
        return frames
    write_all(out_fd, framer.encode(reply))
    return frames[1:]


def _initialize_reply(frame: Frame, handshake: FrontHandshake) -> bytes | None:
    """The reply to `frame` when it is an `initialize` the front's handshake accepts."""
    if not isinstance(frame, bytes) or b'"initialize"' not in frame:
        return None
    request = initialize_request(frame, handshake.clean)
    if request is None:
        return None
    import json

    rid, params = request
    reply = {"jsonrpc": "2.0", "id": rid, "result": handshake.answer(params)}
    return json.dumps(reply, separators=(",", ":"), ensure_ascii=handshake.ensure_ascii).encode()


def initialize_request(
    frame: bytes, clean: Callable[[object], dict[str, Any] | None]
) -> tuple[Any, dict[str, Any]] | None:
    """(id, params) when `frame` is an `initialize` request whose params `clean` accepts; None
    leaves it to the event loop's path (which also reports any error)."""
    import json

    from tether.rpc.json_depth import too_deep

    if too_deep(frame):
        return None  # answered (-32600) once the event loop runs
    try:
        msg = json.loads(frame)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(msg, dict)
        or msg.get("jsonrpc") != "2.0"
        or msg.get("method") != "initialize"
    ):
        return None
    rid = msg.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    params = clean(msg.get("params"))
    return None if params is None else (rid, params)
