"""Tool names for MCP tools: `mcp__<server>__<tool>`, in the characters and length every
provider accepts (`[a-zA-Z0-9_-]{1,64}`), unique within the session."""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 64
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The model-facing name; an over-long one keeps its start and a hash of the whole."""
    name = f"mcp__{_clean(server)}__{_clean(tool)}"
    if len(name) <= MAX_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_LENGTH - 9]}_{digest}"


def unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... (cut to fit) when it is taken."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"_{n}"
        candidate = name[: MAX_LENGTH - len(suffix)] + suffix
    return candidate


def _clean(part: str) -> str:
    return _OUTSIDE.sub("_", part) or "_"
