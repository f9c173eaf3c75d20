"""The language server on a framed stream (stdio, or any other): pygls on tether's framing,
the LSP front on the composition every front shares (tether/rpc/compose.py), until `exit` or
the end of input; then what it opened is closed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.rpc.compose import Composed
    from tether.rpc.lsp.lsp_handshake import LspHandshake
    from tether.rpc.startup import ServeOptions
    from tether.transports.streams import FramedStream


async def serve_stream(
    stream: FramedStream,
    handshake: LspHandshake,
    options: ServeOptions,
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

    composed = composed or compose(options)
    server, converter = make_server()
    conn = Connection(stream, server, handshake, converter)
    code = 0
    async with anyio.create_task_group() as tg:
        front = LspFront(conn, server, composed.deps, tg)
        register(server, front)
        conn.hooks = front.tickets
        tg.start_soon(expire_spill, composed.deps.spill_root, composed.spill_days)
        try:
            code = await conn.run()
        finally:
            tg.cancel_scope.cancel()
            with anyio.CancelScope(shield=True):
                await front.manager.shutdown()  # turns, MCP servers, PTYs, the store
                await composed.aclose()
    return code
