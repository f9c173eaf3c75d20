"""A command's arguments as the model gives them, checked: the program line, its environment,
its timeout and where it runs. Shared by run_argv, run_argv_batch and open_pty."""

from __future__ import annotations

from pathlib import Path

from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools.tool_paths import resolve

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 1800.0


def check_argv(argv: object, where: str = "argv") -> list[str]:
    if isinstance(argv, str):
        raise ToolError(
            "INVALID_ARGS",
            f"{where} must be a list of strings, one per argument (there is no shell): "
            f'e.g. ["git", "status", "--short"], not {argv!r}',
        )
    if not isinstance(argv, list) or not argv:
        raise ToolError("INVALID_ARGS", f"{where} must name a program: a non-empty list")
    items: list[object] = argv
    if not all(isinstance(a, str) for a in items) or not items[0]:
        raise ToolError("INVALID_ARGS", f"{where} must be strings, the first one a program")
    if any("\0" in a for a in items):  # pyright: ignore[reportOperatorIssue]
        raise ToolError("INVALID_ARGS", f"{where} must not contain NUL characters")
    return [str(a) for a in items]


def check_env(env: dict[str, str] | None, where: str = "env") -> dict[str, str]:
    for name, value in (env or {}).items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ToolError("INVALID_ARGS", f"{where}: {name!r} is not a valid variable")
    return dict(env or {})


def check_timeout(value: float | None, default: float, maximum: float, where: str) -> float:
    if value is None:
        return default
    if not value > 0:
        raise ToolError("INVALID_ARGS", f"{where} must be a positive number of seconds")
    if value > maximum:
        raise ToolError("INVALID_ARGS", f"{where} may be at most {maximum:g} seconds")
    return float(value)


def command_cwd(ctx: Capabilities, cwd: str | None, where: str = "cwd") -> Path:
    if cwd is None or cwd in ("", "."):
        return ctx.cwd
    full = resolve(ctx, cwd, access="write")  # a command may change anything where it runs
    if not full.is_dir():
        raise ToolError("NOT_A_DIRECTORY", f"{where} {cwd!r} is not a directory")
    return full
