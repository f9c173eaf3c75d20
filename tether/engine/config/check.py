"""The parsed TOML document, checked table by table into a `ConfigFile`, so that one run reports
every problem with its key and line (msgspec stops at a table's first error)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import msgspec

from tether.engine.config.env_refs import malformed
from tether.engine.config.explain import explain, invalid_value_text
from tether.engine.config.issues import key_name
from tether.engine.config.model_kinds import KINDS
from tether.engine.config.toml_lines import Key, line_of
from tether.engine.web.web_kinds import NO_FETCH, web_kind_names
from tether.errors import ConfigIssue
from tether.schemas.config import (
    AgentConfig,
    ConfigFile,
    Defaults,
    McpServerConfig,
    ModelConfig,
    ProviderConfig,
    SandboxConfig,
    SkillsConfig,
    TrashConfig,
    WorkspaceConfig,
)
from tether.schemas.web import WebConfig

_T = TypeVar("_T", bound=msgspec.Struct)

SECTIONS = (
    "providers",
    "models",
    "defaults",
    "workspace",
    "web",
    "mcp_servers",
    "sandbox",
    "agent",
    "skills",
    "trash",
)
# The web providers with a key and a base URL of their own ([web.NAME]).
_KEYED_WEB = (("deepseek", "base_url"), ("exa", "base_url"), ("perplexity", "base_url"))
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Checker:
    def __init__(self, lines: dict[Key, int]) -> None:
        self.lines = lines
        self.issues: list[ConfigIssue] = []
        self.keys: list[Key] = []  # each issue's key as a path, to leave that key out

    def issue(self, key: Key, message: str) -> None:
        self.issues.append(ConfigIssue(line_of(self.lines, key), key_name(key), message))
        self.keys.append(key)

    def file(self, doc: dict[str, Any]) -> ConfigFile:
        for name in doc:
            if name not in SECTIONS:
                self.issue((name,), f"unknown key (expected one of: {', '.join(SECTIONS)})")
        providers = {
            n: p
            for n, t in self._tables(doc, "providers")
            if (p := self._provider(n, t)) is not None
        }
        models = {
            n: m for n, t in self._tables(doc, "models") if (m := self._model(n, t)) is not None
        }
        defaults = self._section(doc, "defaults", Defaults)
        workspace = self._section(doc, "workspace", WorkspaceConfig)
        web = self._section(doc, "web", WebConfig, self._web_rules)
        sandbox = self._section(doc, "sandbox", SandboxConfig)
        agent = self._section(doc, "agent", AgentConfig, self._agent_rules)
        skills = self._section(doc, "skills", SkillsConfig)
        trash = self._section(doc, "trash", TrashConfig)
        servers = {
            n: m
            for n, t in self._tables(doc, "mcp_servers")
            if (m := self._mcp_server(n, t)) is not None
        }
        return ConfigFile(
            providers=providers,
            models=models,
            defaults=defaults,
            workspace=workspace,
            web=web,
            mcp_servers=servers,
            sandbox=sandbox,
            agent=agent,
            skills=skills,
            trash=trash,
        )

    def _section(
        self,
        doc: dict[str, Any],
        name: str,
        kind: type[_T],
        rules: Callable[[dict[str, Any]], None] | None = None,
    ) -> _T:
        """A top-level table of one Struct; its defaults when absent or broken."""
        table = doc.get(name, {})
        if not isinstance(table, dict):
            self.issue((name,), "expected a table")
            return kind()
        if rules is not None:
            rules(table)
        return self.convert(table, kind, (name,)) or kind()

    def _tables(self, doc: dict[str, Any], section: str) -> Iterator[tuple[str, dict[str, Any]]]:
        value = doc.get(section, {})
        if not isinstance(value, dict):
            self.issue((section,), "expected a table")
            return
        for name, table in value.items():
            if isinstance(table, dict):
                yield name, table
            else:
                self.issue((section, name), "expected a table")

    # --- what the types cannot say; checked on the raw tables, so reported alongside any
    # type error ---------------------------------------------------------------------------

    def _provider(self, name: str, table: dict[str, Any]) -> ProviderConfig | None:
        key = ("providers", name)
        if not _NAME.match(name):
            self.issue(key, "a provider name uses letters, digits, '_', '-' and '.' only")
            return None
        self._one_of((*key, "kind"), table.get("kind"), list(KINDS))
        self._credentials(key, table)
        self._url((*key, "base_url"), table.get("base_url"))
        return self.convert(table, ProviderConfig, key)

    def _model(self, model_id: str, table: dict[str, Any]) -> ModelConfig | None:
        key = ("models", model_id)
        provider, _, model = model_id.partition(":")
        if not (_NAME.match(provider) and model):
            self.issue(key, 'a model is named "provider:model", e.g. "openai:gpt-4.1"')
            return None
        if "kind" in table:
            self._one_of((*key, "kind"), table.get("kind"), list(KINDS))
        return self.convert(table, ModelConfig, key)

    def _mcp_server(self, name: str, table: dict[str, Any]) -> McpServerConfig | None:
        key = ("mcp_servers", name)
        if not _NAME.match(name):
            self.issue(key, "a server name uses letters, digits, '_', '-' and '.' only")
            return None
        either = "set command (a stdio server) or url (streamable HTTP)"
        if "command" in table and "url" in table:
            self.issue((*key, "url"), f"{either}, not both")
        elif "url" in table:
            for extra in ("args", "env"):
                if extra in table:
                    self.issue((*key, extra), f"only a stdio server (command) takes {extra}")
        elif "command" in table:
            if "headers" in table:
                self.issue((*key, "headers"), "only an HTTP server (url) takes headers")
        else:
            self.issue(key, either)
        self._url((*key, "url"), table.get("url"))
        for where, text in _strings(table):
            if malformed(text):
                self.issue(
                    (*key, *where),
                    "'${' starts no variable reference (expected ${NAME} or ${NAME:-default})",
                )
        return self.convert(table, McpServerConfig, key)

    def _web_rules(self, table: dict[str, Any]) -> None:
        search = table.get("search_providers")
        for name in search if isinstance(search, list) else []:
            self._one_of(("web", "search_providers"), name, web_kind_names("search"))
        fetch = table.get("fetch_provider")
        self._one_of(("web", "fetch_provider"), fetch, [*web_kind_names("fetch"), NO_FETCH])
        for name, url_key in (("searxng", "url"), ("bing", "url"), *_KEYED_WEB):
            sub = table.get(name)
            if isinstance(sub, dict):
                self._url(("web", name, url_key), sub.get(url_key))
        for name, _ in _KEYED_WEB:
            sub = table.get(name)
            if isinstance(sub, dict):
                self._credentials(("web", name), sub)

    def _agent_rules(self, table: dict[str, Any]) -> None:
        allowed = table.get("allow_paths")
        if not isinstance(allowed, dict):
            return
        modes = ["read", "write", "exec"]
        for path, mode in list(allowed.items()):
            key = ("agent", "allow_paths", path)
            if not (path.startswith("~") or os.path.isabs(path)):
                self.issue(
                    key,
                    "expected an absolute path (or one starting with ~): the directory is "
                    "open in every project",
                )
            if mode not in modes:  # named here with its path (the type check names neither)
                self.issue(key, invalid_value_text(repr(mode), modes))
                del allowed[path]

    def _one_of(self, key: Key, value: Any, allowed: list[str]) -> None:
        if isinstance(value, str) and value not in allowed:
            self.issue(key, invalid_value_text(repr(value), allowed))

    def _credentials(self, key: Key, table: dict[str, Any]) -> None:
        if "api_key" in table and "api_key_env" in table:
            self.issue((*key, "api_key_env"), "set api_key or api_key_env, not both")
        env_name = table.get("api_key_env")
        if isinstance(env_name, str) and not _ENV_NAME.match(env_name):
            # Never echo the value: it is most likely the key itself, pasted in the wrong place.
            self.issue(
                (*key, "api_key_env"),
                "expected the name of an environment variable (a key itself goes in api_key)",
            )

    def _url(self, key: Key, url: Any) -> None:
        if isinstance(url, str) and not url.startswith(("http://", "https://")):
            self.issue(key, "expected an http:// or https:// URL")

    # --- types -----------------------------------------------------------------------------

    def convert(self, table: dict[str, Any], kind: type[_T], key: Key) -> _T | None:
        """`table` as a `kind` Struct, checked key by key so that every bad key is reported;
        a nested table (`[web.local]`) is checked the same way."""
        fields = {f.name: f for f in msgspec.structs.fields(kind)}
        values: dict[str, Any] = {}
        ok = True
        for name, value in table.items():
            info = fields.get(name)
            if info is None:
                self.issue((*key, name), f"unknown key (expected one of: {', '.join(fields)})")
                ok = False
            elif _is_struct(info.type) and isinstance(value, dict):
                values[name] = self.convert(value, info.type, (*key, name))
                ok = ok and values[name] is not None
            else:
                ok = self._convert_value(value, info.type, (*key, name), values) and ok
        for name, info in fields.items():
            if info.required and name not in table:
                self.issue((*key, name), "missing (it is required)")
                ok = False
        return self._construct(kind, values, key) if ok else None

    def _convert_value(self, value: Any, tp: Any, key: Key, into: dict[str, Any]) -> bool:
        try:
            into[key[-1]] = msgspec.convert(value, tp)
        except msgspec.ValidationError as exc:
            where, message = explain(str(exc), tp)
            self.issue((*key, *where), message)
            return False
        return True

    def _construct(self, kind: type[_T], values: dict[str, Any], key: Key) -> _T | None:
        """The Struct, or None when its own checks (`__post_init__`) refuse the values: the
        message names the field first ("max_redirects must be ..."), which becomes the key."""
        try:
            return kind(**values)
        except (ValueError, TypeError) as exc:
            field, _, rest = str(exc).partition(" ")
            if field in values and rest:
                self.issue((*key, field), rest)
            else:
                self.issue(key, str(exc))
            return None


def _strings(table: dict[str, Any]) -> Iterator[tuple[Key, str]]:
    """Every string of a table, one level of arrays and tables down, with its key."""
    for name, value in table.items():
        if isinstance(value, str):
            yield (name,), value
        elif isinstance(value, list):
            yield from (((name,), v) for v in value if isinstance(v, str))
        elif isinstance(value, dict):
            yield from (((name, k), v) for k, v in value.items() if isinstance(v, str))


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)
