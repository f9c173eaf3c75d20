"""Model-facing tools. Each reaches the outside world only through the seam (ctx.fs, ...)."""

from __future__ import annotations

from tether.engine.registry import ToolDef


def catalog() -> list[ToolDef]:
    """Every tool tether offers, for the composition root to build a Registry from."""
    from tether.tools.ask import ask_user
    from tether.tools.files import list_dir, read_file, write_file
    from tether.tools.todo import todo_write
    from tether.tools.web import web_tools

    return [read_file, write_file, list_dir, todo_write, ask_user, *web_tools()]
