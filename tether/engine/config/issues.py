"""Config errors: each names its key and its line, since the file is the user's and they fix it
by hand."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from tether.engine.config.toml_lines import Key
from tether.errors import TetherError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


class ConfigIssue(msgspec.Struct, frozen=True):
    line: int | None
    key: str  # dotted, quoted where TOML would quote ("" for a file-level problem)
    message: str

    def render(self, path: Path | None) -> str:
        where = str(path) if path is not None else "<config>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(TetherError):
    """The file cannot be used; `issues` lists every problem found, each with key and line."""

    def __init__(self, path: Path | None, issues: list[ConfigIssue]) -> None:
        super().__init__("CONFIG_INVALID", "\n".join(i.render(path) for i in issues))
        self.path = path
        self.issues = issues


def key_name(key: Key) -> str:
    return ".".join(p if _BARE_KEY.match(p) else msgspec.json.encode(p).decode() for p in key)
