"""`[workspace] command_env`, checked against the rest of the file: each entry is a variable
name or a `PREFIX*`, and none names a variable tether reads a key (or a URL that may carry
credentials) from. Also the full list of those variables, which no command ever sees
(`engine/local/env_allowlist.py`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tether.engine.config.file import Config
from tether.engine.config.model_kinds import DEEPSEEK_ENV, env_kinds
from tether.engine.web.web_kinds import EXA_ENV, PERPLEXITY_ENV, SEARXNG_ENV
from tether.errors import ConfigIssue
from tether.schemas.config import ConfigFile

_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?\Z")


def secret_variables(file: ConfigFile) -> frozenset[str]:
    """Every variable a provider or web provider reads a key from, and the provider kinds'
    base URL variables and the SearXNG URL (a URL may carry credentials)."""
    return frozenset(_secrets(file))


def _secrets(file: ConfigFile) -> Iterator[str]:
    for kind in env_kinds():
        assert kind.env is not None
        yield from (kind.env.key, kind.env.base_url)
    yield from (p.api_key_env for p in file.providers.values() if p.api_key_env)
    yield file.web.deepseek.api_key_env or DEEPSEEK_ENV.key
    yield file.web.exa.api_key_env or EXA_ENV
    yield file.web.perplexity.api_key_env or PERPLEXITY_ENV
    yield SEARXNG_ENV


def command_env_issues(config: Config) -> list[ConfigIssue]:
    """What is wrong with `[workspace] command_env`, each naming the key and its line."""
    key = ("workspace", "command_env")
    whose = _owners(config.file)
    issues: list[ConfigIssue] = []
    for entry in config.file.workspace.command_env:
        if not _ENTRY.match(entry):
            message = f"{entry!r} is not a variable name (expected NAME or PREFIX*)"
            issues.append(config.issue(key, message))
        elif entry in whose:
            issues.append(config.issue(key, f"{entry!r} {whose[entry]}; commands never see it"))
    return issues


def _owners(file: ConfigFile) -> dict[str, str]:
    found: dict[str, str] = {}
    for kind in env_kinds():
        assert kind.env is not None
        found[kind.env.key] = f"holds the key of the {kind.name} provider"
        found[kind.env.base_url] = f"holds the {kind.name} provider's URL"
    found[SEARXNG_ENV] = "holds the SearXNG URL, which may carry credentials"
    web_keys = {
        "deepseek": file.web.deepseek.api_key_env or DEEPSEEK_ENV.key,
        "exa": file.web.exa.api_key_env or EXA_ENV,
        "perplexity": file.web.perplexity.api_key_env or PERPLEXITY_ENV,
    }
    for web_name, web_key in web_keys.items():
        found[web_key] = f"holds the key of the web provider {web_name}"
    for name, p in file.providers.items():
        if p.api_key_env:
            found[p.api_key_env] = f"holds the key of provider {name!r}"
    return found
