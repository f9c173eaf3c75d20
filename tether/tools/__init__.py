"""Model-facing tools. Each reaches the outside world only through the seam (ctx.fs, ...)."""

from __future__ import annotations

from pathlib import Path

from tether.engine.registry import DeferredTool, ToolDef
from tether.errors import ToolError
from tether.schemas.web import WebConfig

# The built-in tools in the order the model is offered them, each by its name and the module
# that defines it (as the module's attribute of that name); then the web tools `[web]` enables.
BUILT_IN: tuple[tuple[str, str], ...] = (
    *(("read_file", "files"), ("write_file", "files")),
    *(("edit_replace", "edit"), ("edit_lineno", "edit"), ("list_dir", "files")),
    *(("tree", "search"), ("glob_paths", "search"), ("regex_files", "search")),
    *(("view_image", "files"), ("copy_path", "manage"), ("move_path", "manage")),
    *(("delete_path", "manage"), ("vcs_kind", "vcs"), ("vcs_status", "vcs")),
    *(("vcs_diff", "vcs"), ("vcs_log", "vcs"), ("vcs_branch", "vcs")),
    *(("run_argv", "run"), ("run_argv_batch", "batch")),
    *(("open_pty", "pty"), ("read_pty", "pty"), ("write_pty", "pty"), ("write_pty_keys", "pty")),
    *(("ask_into_pty", "pty"), ("close_pty", "pty")),
    *(("todo_list", "todo"), ("todo_push", "todo"), ("todo_pop", "todo")),
    *(("todo_update", "todo"), ("todo_clear", "todo"), ("ask_user", "ask")),
    *(("wait", "wait"), ("request_directory_access", "access")),
    *(("new_temporary_workspace", "access"), ("skill_read", "skills"), ("skill_list", "skills")),
    *(("skill_search", "skills"), ("skill_create", "skills"), ("skill_edit", "skills")),
)
SKILL_MODULE = "skills"  # its tools are left out with `[skills] enabled = false`


def built_in_names(*, skills: bool = True) -> list[str]:
    """The built-in tools offered, in order (the skill tools only with skills on)."""
    return [name for name, module in BUILT_IN if skills or module != SKILL_MODULE]


def retired(name: str) -> ToolError | None:
    """Why a call to a tool tether no longer offers fails (a registry explainer)."""
    from tether.tools.todo import retired as retired_todo

    return retired_todo(name)


def catalog(web: WebConfig | None = None, *, skills: bool = True) -> list[ToolDef]:
    """Every tool tether offers (the web tools as `web`, the `[web]` table, enables them; the
    skill tools unless `[skills] enabled = false`), each module loaded."""
    from tether.tools.web_tools import web_tools

    return [built_in(name) for name in built_in_names(skills=skills)] + web_tools(web)


def built_in(name: str) -> ToolDef:
    """The built-in tool `name`, its module loaded (KeyError: no such built-in tool)."""
    import importlib

    module = dict(BUILT_IN)[name]
    found: ToolDef = getattr(importlib.import_module(f"tether.tools.{module}"), name)
    return found


def deferred_catalog(
    web: WebConfig | None, cache: Path, *, skills: bool = True
) -> list[DeferredTool]:
    """`catalog(web, skills=skills)` for the composition root to build a Registry from: the
    tools' specs, read from `cache` (a directory) when they were kept there for this version,
    configuration and source, and each module loaded when its tool is first called
    (tools/tool_specs.py)."""
    from tether.tools.tool_specs import deferred

    return deferred(web or WebConfig(), cache, skills=skills)
