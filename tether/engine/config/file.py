"""The config file: where it is, reading it, and the example `tether config init` writes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tether.engine.config.issues import key_name
from tether.engine.config.toml_lines import Key, index_keys, line_of
from tether.errors import ConfigError, ConfigIssue
from tether.paths import config_path
from tether.schemas.config import ConfigFile

if TYPE_CHECKING:
    import tomllib


def example_config() -> str:
    """The commented example `tether config init` writes; every example in it is valid."""
    return Path(__file__).with_name("example.toml").read_text(encoding="utf-8")


def write_example(path: Path, *, force: bool = False) -> None:
    """Write the example config; FileExistsError unless `force` when `path` exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w" if force else "x", encoding="utf-8") as f:
        f.write(example_config())


class Config(msgspec.Struct):
    """A validated config file, with where each of its keys is written."""

    file: ConfigFile
    path: Path | None = None
    lines: dict[Key, int] = msgspec.field(default_factory=dict[Key, int])
    # Which file each key is written in, where a project file is merged over the user's.
    files: dict[Key, Path] = msgspec.field(default_factory=dict[Key, Path])

    def issue(self, key: Key, message: str) -> ConfigIssue:
        from tether.engine.config.lenient import file_of

        where = file_of(self.files, key) if self.files else None
        return ConfigIssue(line_of(self.lines, key), key_name(key), message, where)


def load_config(path: Path | None = None, *, env: Mapping[str, str] | None = None) -> Config | None:
    """The config file at `path` (default: `config_path()`); None when there is none."""
    path = config_path(env) if path is None else path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, [ConfigIssue(None, "", f"cannot read the file: {exc}")]) from None
    return parse_config(text, path)


def parse_config(text: str, path: Path | None = None) -> Config:
    # The TOML reader and the checks load with a file to read: most starts have none.
    import tomllib

    from tether.engine.config.check import Checker

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, [syntax_issue(exc, text)]) from None
    lines = index_keys(text)
    checker = Checker(lines)
    file = checker.file(doc)
    if checker.issues:
        raise ConfigError(path, sorted(checker.issues, key=lambda i: i.line or 0))
    return Config(file, path, lines)


def syntax_issue(exc: tomllib.TOMLDecodeError, text: str) -> ConfigIssue:
    message = str(exc)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if m is not None:
        return ConfigIssue(
            int(m[1]), "", f"TOML syntax error: {message[: m.start()]} (column {m[2]})"
        )
    m = re.search(r"\s*\(at end of document\)$", message)
    if m is not None:  # an unclosed array or string: the last line is where the reader gave up
        return ConfigIssue(
            len(text.splitlines()) or 1,
            "",
            f"TOML syntax error: {message[: m.start()]} at the end of the file",
        )
    return ConfigIssue(None, "", f"TOML syntax error: {message}")
