"""ACP `McpServer` entries (stdio, http, sse) as the engine's ServerSpecs.

A server whose entry carries `"_meta": {"tether": {"readOnly": true}}` is trusted as
read-only: its tools run without asking (like the built-in reads), as does any tool its server
annotates `readOnlyHint: true`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tether.engine.mcp.spec import ServerSpec
from tether.schemas import acp


def server_specs(servers: list[dict[str, Any]]) -> list[ServerSpec]:
    """The entries of `mcpServers` (checked by `session/new`), in order."""
    return [_spec(s) for s in servers]


def _spec(raw: dict[str, Any]) -> ServerSpec:
    read_only = _read_only(raw.get("_meta"))
    if "type" in raw:
        http = msgspec.convert(raw, acp.McpServerHttp)
        return ServerSpec(
            name=http.name,
            transport=http.type,
            url=http.url,
            headers={h.name: h.value for h in http.headers},
            read_only=read_only,
        )
    stdio = msgspec.convert(raw, acp.McpServerStdio)
    return ServerSpec(
        name=stdio.name,
        transport="stdio",
        command=stdio.command,
        args=list(stdio.args),
        env={e.name: e.value for e in stdio.env},
        read_only=read_only,
    )


def _read_only(meta: Any) -> bool:
    ours = meta.get("tether") if isinstance(meta, dict) else None
    return isinstance(ours, dict) and ours.get("readOnly") is True
