"""The settings in effect, each with where it came from: a flag, an environment variable, the
project's file or the user's (with its line), or tether's default. What `tether config show`
prints; secrets are shown as set or not, never their value."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.default_model import MODEL_ENV
from tether.engine.config.issues import key_name
from tether.engine.config.model_kinds import KINDS
from tether.engine.config.resolve import Setup
from tether.engine.config.toml_lines import Key
from tether.schemas.config import ConfigFile

OriginKind = Literal["flag", "environment", "project", "user", "default"]
_DICTS = ("providers", "models", "mcp_servers")  # tables of named entries: only those written
_SECRET = ("api_key", "headers", "env")  # a value that may be a credential
# Environment variables over a file's key (read where the setting is used).
_ENV_OVER: dict[Key, str] = {
    ("workspace", "spill_days"): "TETHER_SPILL_DAYS",
    ("sandbox", "mechanism"): "TETHER_SANDBOX",
}


class Origin(msgspec.Struct):
    kind: OriginKind
    path: str | None = None  # a file's
    line: int | None = None
    name: str | None = None  # a flag's or a variable's; for a default, why

    def text(self) -> str:
        if self.path is not None:
            return f"{self.kind} {self.path}" + (f":{self.line}" if self.line else "")
        return f"{self.kind} {self.name}" if self.name else self.kind


class Setting(msgspec.Struct):
    key: str
    value: Any
    origin: Origin


def effective_settings(
    setup: Setup, catalog: ModelCatalog, env: Mapping[str, str]
) -> list[Setting]:
    """The default model first, then every key of every table (unset ones at their default),
    then the providers the environment adds."""
    return [_model(setup, catalog), *_file_settings(setup, env), *_env_providers(setup)]


def _model(setup: Setup, catalog: ModelCatalog) -> Setting:
    source = catalog.default_source
    if source in ("--model", "--script"):
        origin = Origin("flag", name=source)
    elif source == MODEL_ENV:
        origin = Origin("environment", name=MODEL_ENV)
    elif source.startswith("[defaults] model"):
        origin = _file_origin(setup, ("defaults", "model"))
    else:
        origin = Origin("default", name=source)
    return Setting("model", catalog.default, origin)


def _file_settings(setup: Setup, env: Mapping[str, str]) -> Iterator[Setting]:
    file = setup.config.file if setup.config is not None else ConfigFile()
    for key, value in _leaves(msgspec.to_builtins(file), ()):
        variable = _ENV_OVER.get(key)
        if variable and env.get(variable):
            yield Setting(key_name(key), env[variable], Origin("environment", name=variable))
            continue
        origin = _file_origin(setup, key)
        if key[0] in _DICTS and origin.kind == "default":
            continue  # a named entry's unset keys: its provider's or tether's, shown by doctor
        yield Setting(key_name(key), _mask(key, value), origin)


def _env_providers(setup: Setup) -> Iterator[Setting]:
    for p in setup.providers.values():
        if p.origin == "environment":
            variables = KINDS[p.kind].env
            url_variable = variables.base_url if variables is not None else None
            named = p.key_source.removeprefix("env ") if p.api_key else url_variable
            origin = Origin("environment", name=named)
            value = {"kind": p.kind, "base_url": p.base_url}
            yield Setting(key_name(("providers", p.name)), value, origin)


def _leaves(value: Any, key: Key) -> Iterator[tuple[Key, Any]]:
    """Each setting down to its value; a table of credentials (`headers`, `env`) is one value."""
    if isinstance(value, dict) and value and not (key and key[-1] in _SECRET):
        for name, inner in value.items():
            yield from _leaves(inner, (*key, str(name)))
    else:
        yield key, value


def _mask(key: Key, value: Any) -> Any:
    if key[-1] in _SECRET and value:
        return "(set)"
    return value


def _file_origin(setup: Setup, key: Key) -> Origin:
    config = setup.config
    if config is None or key not in config.lines:
        return Origin("default")
    path = config.files.get(key) or config.path
    kind: OriginKind = "project" if path is not None and path == setup.project_file else "user"
    return Origin(kind, str(path) if path is not None else None, config.lines[key])


def files_read(setup: Setup) -> dict[str, str | None]:
    def shown(p: Path | None) -> str | None:
        return str(p) if p is not None else None

    return {"user": shown(setup.user_file), "project": shown(setup.project_file)}
