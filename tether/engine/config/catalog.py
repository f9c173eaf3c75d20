"""The catalog: the models a session can pick from, how to open each, the default, and the HTTP
clients the providers' sessions share (closed with the catalog)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec

from tether.engine.config.http_clients import HttpClients
from tether.engine.providers.base import LLM, ModelInfo


class ListingLLM(LLM, Protocol):
    """A model whose provider can list what else it serves (the HTTP adapters)."""

    async def list_models(self) -> Sequence[Any]: ...


class ProviderHandle(msgspec.Struct, frozen=True):
    """A configured provider, as model discovery sees it."""

    name: str
    kind: str
    base_url: str
    keyless: bool  # sends no credentials: a local server
    open: Callable[[str, ModelInfo], ListingLLM]  # (model name, its info) -> an adapter
    default_reasoning: str | None = None  # the provider's layer, else [agent]'s
    hosted_tools: tuple[str, ...] = ()


class ModelCatalog(msgspec.Struct):
    """Model ids ("provider:model") with a factory each; every session opens its own instance."""

    default: str
    default_source: str = "nothing is configured"  # why it is the default, for `tether doctor`
    factories: dict[str, Callable[[], LLM]] = msgspec.field(
        default_factory=dict[str, Callable[[], LLM]]
    )
    infos: dict[str, ModelInfo] = msgspec.field(default_factory=dict[str, ModelInfo])
    # Problems met while building it (a broken config file, an unknown TETHER_MODEL): tether
    # still serves, and a front may show these to the user once.
    warnings: list[str] = msgspec.field(default_factory=list[str])
    # The default models asked for (--model, TETHER_MODEL, [defaults] model) that name no
    # usable model, each as its warning: `tether ask` and `tether doctor` stop on these.
    unusable_choices: list[str] = msgspec.field(default_factory=list[str])
    # The config file's `[workspace] path_denylist`, when it sets one (None: the built-in list).
    path_denylist: tuple[str, ...] | None = None
    # The providers behind the models, by name (empty for the demo and scripted models).
    providers: dict[str, ProviderHandle] = msgspec.field(default_factory=dict[str, ProviderHandle])
    clients: HttpClients = msgspec.field(default_factory=HttpClients)

    def add(self, info: ModelInfo, factory: Callable[[], LLM]) -> None:
        self.infos[info.id] = info
        self.factories[info.id] = factory

    def open(self, model_id: str) -> LLM:
        return self.factories[model_id]()

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.factories

    async def aclose(self) -> None:
        """Close the providers' HTTP clients (the agent is stopping)."""
        await self.clients.aclose()


def builtin_catalog(script: str | None = None) -> ModelCatalog:
    """The demo model, plus a scripted model when a script file is given (which then becomes
    the default)."""
    from pathlib import Path

    from tether.engine.providers.demo import INFO, DemoModel
    from tether.engine.providers.scripted import ScriptedModel, load_script

    catalog = ModelCatalog(default=INFO.id)
    catalog.add(INFO, DemoModel)
    if script is not None:
        loaded = load_script(Path(script))
        probe = ScriptedModel(loaded)
        catalog.add(probe.info, lambda: ScriptedModel(loaded))
        catalog.default = probe.info.id
        catalog.default_source = "--script"
    return catalog
