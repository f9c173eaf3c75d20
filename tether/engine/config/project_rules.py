"""What a project's `.tether/config.toml` may set. A cloned repository is someone else's text:
it may tune how tether works in it, never where the user's keys go, what runs without asking,
or what commands see. So the project file names no provider, model entry, MCP server or web
provider (each could send the user's API key, or the code, to a server of the repository's
choosing, or start a program), and loosens no permission; everything else it may set.

Refused keys are reported like bad keys (file, line, why) and left out alone."""

from __future__ import annotations

from typing import Any

from tether.engine.config.toml_lines import Key

PROVIDERS_WHY = "a project file may not name providers, models, MCP servers or web providers"
LOOSENS_WHY = "a project file may not loosen what runs without asking"
_WHOLE = ("providers", "models", "mcp_servers", "web", "sandbox")
# Keys a project may set only to the safe value (the others' default), or not at all (None).
_ONLY: dict[Key, tuple[Any, ...] | None] = {
    ("agent", "allow_paths"): None,
    ("agent", "auto_continue_limits"): (False,),
    ("agent", "default_mode"): ("ask", "read-only"),
    ("agent", "always_scope"): ("session",),
    ("workspace", "path_denylist"): None,
    ("workspace", "builtin_command_denylist"): (True,),
    ("workspace", "command_env"): None,
    ("skills", "paths"): None,
    ("skills", "allow_write"): (False,),
    ("trash", "enabled"): (True,),
}
# Lists a project file adds to instead of replacing (replacing could drop the user's entries).
ADDED_TO: tuple[Key, ...] = (("workspace", "command_denylist"), ("agent", "instructions"))


def refusals(doc: dict[str, Any]) -> list[tuple[Key, str]]:
    """Each key of a project file's document it may not set, with why."""
    found: list[tuple[Key, str]] = []
    for section, table in doc.items():
        if section in _WHOLE:
            found.append(((section,), f"refused: {PROVIDERS_WHY}"))
            continue
        if not isinstance(table, dict):
            continue
        for name, value in table.items():
            key = (section, name)
            if key not in _ONLY:
                continue
            allowed = _ONLY[key]
            if allowed is None:
                found.append((key, f"refused: {LOOSENS_WHY} (set it in the user config)"))
            elif value not in allowed:
                shown = " or ".join(_toml(v) for v in allowed)
                found.append((key, f"refused: {LOOSENS_WHY} (a project may set only {shown})"))
    return found


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"'
