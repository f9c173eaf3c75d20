"""`${NAME}` and `${NAME:-default}` in a config string, replaced from tether's environment (as
Claude Code's `.mcp.json` has it): a secret the file names but does not hold."""

from __future__ import annotations

import re
from collections.abc import Mapping

# `${` alone (group 1 None) is a reference that does not parse: an error, not text kept as is.
_REF = re.compile(r"\$\{(?:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})?")


class Unset(LookupError):
    """`${NAME}` without a default, and NAME is not in the environment."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def malformed(text: str) -> bool:
    """Whether a `${` in `text` starts no valid reference."""
    return any(m[1] is None for m in _REF.finditer(text))


def expand(text: str, env: Mapping[str, str]) -> str:
    """`text` with each reference replaced; a default applies when the variable is unset or
    empty (as in the shell). Raises Unset."""

    def value(m: re.Match[str]) -> str:
        name, default = m[1], m[2]
        if name is None:  # refused when the file was read
            return m[0]
        found = env.get(name)
        if default is not None:
            return found or default
        if found is None:
            raise Unset(name)
        return found

    return _REF.sub(value, text)
