"""Model discovery: the models each provider's `/models` lists, offered next to the built-in ones.

Fetched once per provider per process, in the background (a front starts it after answering
`session/new`, never before); a keyed provider's list is also kept on disk under the data dir
for a day, so the next `tether acp` has it at once. A listed model takes the built-in limits
when tether knows its id, the limits the listing states (Anthropic, vLLM) otherwise, and the
catalog's defaults for the rest. A provider that cannot list is logged and left as it was.

A keyless local server (Ollama, llama.cpp, vLLM) whose list lacks the default model: the first
model it lists becomes the default, and `notice` says so.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec

from tether.engine.config.catalog import ModelCatalog, ProviderHandle
from tether.engine.config.model_kinds import KINDS
from tether.engine.config.resolve import clamp_level, model_info
from tether.engine.providers.base import LLM, ModelInfo
from tether.engine.providers.model_list import RemoteModel
from tether.errors import ProviderError
from tether.schemas.config import ModelConfig, ReasoningLevel

log = logging.getLogger("tether.discovery")

DISK_TTL = 24 * 3600.0  # seconds a keyed provider's list is reused from disk
FETCH_TIMEOUT = 20.0  # seconds for a whole listing, pages included
MAX_MODELS = 200  # per provider: a gateway listing thousands would swamp the model menu


class _CacheFile(msgspec.Struct):
    kind: str
    base_url: str
    fetched_at: float
    models: list[RemoteModel]


class Discovery:
    """The model lists of a catalog's providers, merged into that catalog."""

    def __init__(
        self,
        catalog: ModelCatalog,
        cache_dir: Path | None = None,
        *,
        ttl: float = DISK_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.catalog = catalog
        self.cache_dir = cache_dir
        self.ttl = ttl
        self.clock = clock
        self.found: dict[str, list[RemoteModel]] = {}  # provider -> its chat models, in order
        self.errors: dict[str, str] = {}  # provider -> why its list is missing
        self.notice: str | None = None  # why the default model changed, for the user
        self.replaced: str | None = None  # the default model that was replaced
        self._lock = anyio.Lock()
        self._done = False

    async def refresh(self) -> bool:
        """List every provider's models (the first call fetches, later ones wait for it) and
        merge them into the catalog. True when this call changed the catalog."""
        async with self._lock:
            if self._done:
                return False
            before = (list(self.catalog.infos), self.catalog.default)
            handles = list(self.catalog.providers.values())
            async with anyio.create_task_group() as tg:
                for handle in handles:
                    tg.start_soon(self._fetch, handle)
            for handle in handles:
                self._merge(handle, self.found.get(handle.name, []))
            self._fallback_default()
            self._done = True
            return (list(self.catalog.infos), self.catalog.default) != before

    def replacement(self, model_id: str) -> str | None:
        """The model to use instead of `model_id`, when discovery replaced that default."""
        return self.catalog.default if model_id == self.replaced else None

    # --- fetching ------------------------------------------------------------------------

    async def _fetch(self, handle: ProviderHandle) -> None:
        cached = self._read_cache(handle)
        if cached is not None:
            self.found[handle.name] = cached
            return
        lister = handle.open("", ModelInfo(f"{handle.name}:", "model list"))
        try:
            with anyio.fail_after(FETCH_TIMEOUT):
                models = list(await lister.list_models())
        except (ProviderError, TimeoutError) as exc:
            reason = str(exc) or f"no answer within {FETCH_TIMEOUT:g} s"
            log.info("provider %s: no model list: %s", handle.name, reason)
            self.errors[handle.name] = reason
            return
        self.found[handle.name] = models[:MAX_MODELS]
        self._write_cache(handle, models[:MAX_MODELS])

    def _cache_path(self, handle: ProviderHandle) -> Path | None:
        # A local server's list changes with every pull and costs nothing to ask: not kept.
        if self.cache_dir is None or handle.keyless:
            return None
        where = hashlib.sha256(f"{handle.kind} {handle.base_url}".encode()).hexdigest()[:16]
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", handle.name)
        return self.cache_dir / f"{safe}-{where}.json"

    def _read_cache(self, handle: ProviderHandle) -> list[RemoteModel] | None:
        path = self._cache_path(handle)
        if path is None:
            return None
        try:
            entry = msgspec.json.decode(path.read_bytes(), type=_CacheFile)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        fresh = 0 <= self.clock() - entry.fetched_at <= self.ttl
        same = (entry.kind, entry.base_url) == (handle.kind, handle.base_url)
        return entry.models if fresh and same else None

    def _write_cache(self, handle: ProviderHandle, models: list[RemoteModel]) -> None:
        path = self._cache_path(handle)
        if path is None:
            return
        entry = _CacheFile(handle.kind, handle.base_url, self.clock(), models)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".tmp")
            partial.write_bytes(msgspec.json.encode(entry))
            partial.replace(path)
        except OSError as exc:
            log.info("cannot keep the model list of %s: %s", handle.name, exc)

    # --- merging -------------------------------------------------------------------------

    def _merge(self, handle: ProviderHandle, models: list[RemoteModel]) -> None:
        kind = KINDS.get(handle.kind)
        builtin = kind.models if kind is not None else {}
        for m in models:
            model_id = f"{handle.name}:{m.id}"
            if model_id in self.catalog:
                continue  # the built-in table and the config file know better
            info = _layered(
                handle, model_info(model_id, builtin.get(m.id) or _spec(handle.name, m))
            )
            self.catalog.add(info, _opener(handle, m.id, info))

    def _fallback_default(self) -> None:
        default = self.catalog.default
        name, _, model = default.partition(":")
        handle = self.catalog.providers.get(name)
        listed = self.found.get(name)
        if handle is None or not handle.keyless or listed is None:
            return
        first = local_fallback(model, [m.id for m in listed])
        if first is None:
            return
        self.catalog.default, self.replaced = f"{name}:{first}", default
        self.notice = (
            f"Using {first}, the first model the server at {handle.base_url} lists "
            f"(it does not list {model})"
        )
        log.warning("%s", self.notice)


def local_fallback(model: str, listed: list[str]) -> str | None:
    """The model a keyless (local) server runs instead of `model`: the first it lists, when
    it lists some but not `model` (a local server names its models its own way)."""
    return listed[0] if listed and model not in listed else None


def _layered(handle: ProviderHandle, info: ModelInfo) -> ModelInfo:
    """A listed model with its provider's (else [agent]'s) thinking strength and hosted tools."""
    level = info.default_reasoning
    if handle.default_reasoning is not None and info.reasoning_levels:
        level = clamp_level(handle.default_reasoning, info.reasoning_levels)
    return msgspec.structs.replace(info, default_reasoning=level, hosted_tools=handle.hosted_tools)


def _opener(handle: ProviderHandle, model: str, info: ModelInfo) -> Callable[[], LLM]:
    return lambda: handle.open(model, info)


def _spec(provider: str, m: RemoteModel) -> ModelConfig:
    """What the listing says, over the catalog's defaults."""
    window = m.context_window
    output = m.max_output_tokens
    if window is not None and output is not None and output > window:
        output = None  # an inconsistent listing: keep the default limit
    levels: list[ReasoningLevel] = [lvl for lvl in _LEVELS if lvl in m.reasoning_levels]
    default: ReasoningLevel | None = None
    if levels:  # a budget model thinks only when asked; an effort model's API default is high
        default = "none" if m.thinking == "budget" else "high" if "high" in levels else levels[0]
    return ModelConfig(
        name=f"{m.name} ({provider})" if m.name else None,
        context_window=window,
        max_output_tokens=output,
        images=m.images,
        reasoning=levels or None,
        default_reasoning=default,
        thinking="effort" if m.thinking == "effort" else "budget" if m.thinking else None,
    )


_LEVELS: tuple[ReasoningLevel, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
