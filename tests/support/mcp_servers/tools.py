"""The tools the test MCP servers offer, built with the official SDK (`MCPServer`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(read_only_hint=True)
# A 1x1 PNG, for a tool that returns a picture.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


class Item(BaseModel):
    title: str
    tags: list[str] = []


def build(name: str) -> MCPServer:
    server = MCPServer(name, instructions=f"Use the {name} tools to repeat text back.")

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    @server.tool(annotations=READ_ONLY)
    def peek(text: str) -> str:
        """Look at the text without changing anything."""
        return f"peeked at {text!r}"

    @server.tool()
    def file_items(items: list[Item], note: str | None = None) -> str:
        """File some items (a nested argument type: the schema has definitions)."""
        return f"filed {len(items)} items" + (f" ({note})" if note else "")

    @server.tool(annotations=READ_ONLY)
    def fail(reason: str) -> str:
        """Fail in the server's own words."""
        raise ToolError(f"cannot do that: {reason}")

    @server.tool(annotations=READ_ONLY)
    def picture() -> Image:
        """Return a tiny picture."""
        return Image(data=PNG, format="png")

    @server.tool(annotations=READ_ONLY)
    async def hang(marker: str) -> str:
        """Wait until cancelled, saying so in the marker file."""
        path = Path(marker)
        path.write_text("started")
        try:
            await anyio.sleep(60)
        finally:
            path.write_text("cancelled")
        return "woke up"

    @server.tool(annotations=READ_ONLY)
    def env(name: str) -> str:
        """The value of an environment variable of the server's process."""
        return os.environ.get(name, "(unset)")

    @server.tool(annotations=READ_ONLY)
    def header(name: str, ctx: Context) -> str:
        """The value of a header of the HTTP request carrying this call (HTTP servers)."""
        return (ctx.headers or {}).get(name.lower(), "(unset)")

    @server.tool(annotations=READ_ONLY)
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool named `name` (it repeats its text), and say the tools changed."""

        def added(text: str) -> str:
            return f"{name}: {text}"

        server.add_tool(added, name=name, description=f"The tool {name}, added on request.")
        await ctx.notify_tools_changed()
        return f"added {name}"

    @server.tool(annotations=READ_ONLY)
    async def teach(name: str, ctx: Context) -> str:
        """Add a prompt named `name` (no arguments), and say the prompts changed."""

        def taught() -> str:
            return f"You were taught {name}."

        server.add_prompt(Prompt.from_function(taught, name=name, description=f"Taught {name}."))
        await ctx.notify_prompts_changed()
        return f"taught {name}"

    @server.prompt()
    def review(file: str, focus: str = "bugs") -> str:
        """Review a file."""
        return f"Please review {file} for {focus}."

    @server.tool()
    def crash() -> str:
        """Exit the server at once, mid-call."""
        sys.stderr.write("echo server: crashing on request\n")
        sys.stderr.flush()
        os._exit(3)

    return server
