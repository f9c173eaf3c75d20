"""The catalog `tether acp` serves and `tether doctor` shows: the demo model (always), a scripted
model when a script is given, and every model of every configured provider, with the default."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tether.engine.config.adapters import make_adapter, model_factory
from tether.engine.config.catalog import ModelCatalog, ProviderHandle, builtin_catalog
from tether.engine.config.default_model import (
    MODEL_ENV,
    Choice,
    choose_default,
    default_to_a_provider,
)
from tether.engine.config.file import Config
from tether.engine.config.http_clients import HttpClients
from tether.engine.config.resolve import Provider, Setup, load_setup, provider_of, resolve
from tether.schemas.config import AgentConfig

if TYPE_CHECKING:
    from tether.engine.providers.retry import RetryPolicy

log = logging.getLogger("tether.config")


def load_catalog(
    *,
    script: str | None = None,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelCatalog:
    """The catalog of `load_setup()`: a broken config file is logged, left out, and kept in
    `warnings`."""
    env = os.environ if env is None else env
    catalog = catalog_for(load_setup(env), script=script, model_override=model_override, env=env)
    log_warnings(catalog)
    return catalog


def log_warnings(catalog: ModelCatalog, logged: list[str] | None = None) -> None:
    for warning in [*(logged or []), *catalog.warnings]:
        log.warning("%s", warning)


def build_catalog(
    config: Config | None,
    *,
    script: str | None = None,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelCatalog:
    """Raises ConfigError for a file whose references do not resolve."""
    env = os.environ if env is None else env
    return catalog_for(
        resolve(config, env=env), script=script, model_override=model_override, env=env
    )


def catalog_for(
    setup: Setup,
    *,
    script: str | None = None,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelCatalog:
    env = os.environ if env is None else env
    catalog = builtin_catalog(script)
    catalog.warnings.extend(setup.warnings)
    catalog.path_denylist = setup.path_denylist
    retry = retry_policy(setup.agent)
    for info in setup.models.values():
        provider = setup.providers[provider_of(info.id)]
        catalog.add(info, model_factory(provider, info, catalog.clients, retry))
    for provider in setup.providers.values():
        layer = provider.default_reasoning or setup.agent.default_reasoning
        catalog.providers[provider.name] = _handle(provider, catalog.clients, layer)
    choices: list[Choice] = [("--model", model_override)]
    if script is None:  # an explicit script outranks the ambient choices
        choices += [(MODEL_ENV, env.get(MODEL_ENV)), (setup.file_default_at, setup.file_default)]
    if not choose_default(catalog, setup, choices) and script is None:
        default_to_a_provider(catalog, setup)
    return catalog


def retry_policy(agent: AgentConfig) -> RetryPolicy:
    """The `[agent]` table's retry settings as the adapters' policy."""
    from tether.engine.providers.retry import RetryPolicy

    return RetryPolicy(
        max_attempts=agent.retry_attempts,
        delays=tuple(agent.retry_delays),
        step=agent.retry_step,
        max_delay=agent.retry_max_wait,
        max_total=agent.retry_max_total,
    )


def _handle(provider: Provider, clients: HttpClients, reasoning: str | None) -> ProviderHandle:
    """The provider for model discovery: its models open on the shared client and take the
    layers above them (`reasoning`: the provider's thinking strength, else [agent]'s)."""
    return ProviderHandle(
        provider.name,
        provider.kind,
        provider.base_url,
        keyless=not provider.api_key,
        open=lambda model, info: make_adapter(provider, model, info, client=clients.get(provider)),
        default_reasoning=reasoning,
        hosted_tools=provider.hosted_tools,
    )
