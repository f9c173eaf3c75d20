"""Model-facing tools. Each reaches the outside world only through the seam (ctx.fs, ...)."""

from __future__ import annotations

from tether.engine.registry import ToolDef
from tether.errors import ToolError
from tether.schemas.web import WebConfig


def retired(name: str) -> ToolError | None:
    """Why a call to a tool tether no longer offers fails (a registry explainer)."""
    from tether.tools.todo import retired as retired_todo

    return retired_todo(name)


def catalog(web: WebConfig | None = None, *, skills: bool = True) -> list[ToolDef]:
    """Every tool tether offers (the web tools as `web`, the `[web]` table, enables them; the
    skill tools unless `[skills] enabled = false`), for the composition root to build a
    Registry from."""
    from tether.tools.access import new_temporary_workspace, request_directory_access
    from tether.tools.ask import ask_user
    from tether.tools.batch import run_argv_batch
    from tether.tools.edit import edit_lineno, edit_replace
    from tether.tools.files import list_dir, read_file, view_image, write_file
    from tether.tools.manage import copy_path, delete_path, move_path
    from tether.tools.pty import (
        ask_into_pty,
        close_pty,
        open_pty,
        read_pty,
        write_pty,
        write_pty_keys,
    )
    from tether.tools.run import run_argv
    from tether.tools.search import glob_paths, regex_files, tree
    from tether.tools.skills import skill_tools
    from tether.tools.todo import todo_tools
    from tether.tools.vcs import vcs_branch, vcs_diff, vcs_kind, vcs_log, vcs_status
    from tether.tools.wait import wait
    from tether.tools.web_tools import web_tools

    return [
        read_file,
        write_file,
        edit_replace,
        edit_lineno,
        list_dir,
        tree,
        glob_paths,
        regex_files,
        view_image,
        copy_path,
        move_path,
        delete_path,
        vcs_kind,
        vcs_status,
        vcs_diff,
        vcs_log,
        vcs_branch,
        run_argv,
        run_argv_batch,
        open_pty,
        read_pty,
        write_pty,
        write_pty_keys,
        ask_into_pty,
        close_pty,
        *todo_tools(),
        ask_user,
        wait,
        request_directory_access,
        new_temporary_workspace,
        *(skill_tools() if skills else []),
        *web_tools(web),
    ]
