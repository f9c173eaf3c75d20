"""The config file's `[mcp_servers.NAME]` tables as the engine's ServerSpecs: the enabled
ones, their `${VAR}` references replaced from tether's environment.

A reference to an unset variable does not break the file: that server alone cannot start, and
says why (with the key and line) when a session would start it.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from tether.engine.config.env_refs import Unset, expand
from tether.engine.config.file import Config
from tether.engine.config.toml_lines import Key
from tether.engine.mcp.spec import ServerSpec
from tether.schemas.config import McpServerConfig


def configured_servers(config: Config | None, env: Mapping[str, str]) -> tuple[ServerSpec, ...]:
    if config is None:
        return ()
    return tuple(
        _Expander(config, name, env).spec(server)
        for name, server in config.file.mcp_servers.items()
        if server.enabled
    )


class _Expander:
    def __init__(self, config: Config, name: str, env: Mapping[str, str]) -> None:
        self.config = config
        self.name = name
        self.env = env
        self.problems: list[str] = []

    def spec(self, s: McpServerConfig) -> ServerSpec:
        if s.command is not None:
            spec = ServerSpec(
                name=self.name,
                transport="stdio",
                command=self.text(("command",), s.command),
                args=[self.text(("args",), a) for a in s.args],
                env={k: self.text(("env", k), v) for k, v in s.env.items()},
                read_only=s.read_only,
                timeout=s.timeout,
            )
        else:
            assert s.url is not None  # the checker requires one of them
            spec = ServerSpec(
                name=self.name,
                transport="http",
                url=self.text(("url",), s.url),
                headers={k: self.text(("headers", k), v) for k, v in s.headers.items()},
                read_only=s.read_only,
                timeout=s.timeout,
            )
        if self.problems:
            return msgspec.structs.replace(spec, problem=self.problems[0])
        return spec

    def text(self, key: Key, value: str) -> str:
        try:
            return expand(value, self.env)
        except Unset as exc:
            where = ("mcp_servers", self.name, *key)
            message = f"${{{exc.name}}} is not set in tether's environment"
            self.problems.append(self.config.issue(where, message).render(self.config.path))
            return value
