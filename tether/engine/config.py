"""The config file and the environment, turned into the catalog of models a session can pick.

Sources, later ones winning: providers from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY,
DEEPSEEK_API_KEY, or the matching *_BASE_URL alone: a local server without credentials), then
`[providers.NAME]` tables of the TOML file at `config_path()`. Each provider offers its kind's
built-in models (unless `builtin_models = false`) plus every `[models."NAME:model"]` entry, which
may also override a built-in model's fields.

The default model: `--model`, else `--script`'s model, else TETHER_MODEL, else `[defaults] model`,
else the first model of the first provider (the file's providers before the environment's), else
the offline demo, which is thus the default only when nothing is configured. A model id naming a
known provider but an unlisted model is added with default limits, so a new model needs no config
change.

Every validation error names its key and its line: the file is the user's, and they fix it by
hand.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import msgspec

from tether.engine.builtin_models import BUILTIN_MODELS
from tether.engine.models import ModelCatalog, ProviderHandle, builtin_catalog
from tether.engine.providers.base import LLM, ModelInfo
from tether.engine.toml_lines import Key, index_keys, line_of
from tether.schemas.config import (
    PROVIDER_KINDS,
    ConfigFile,
    Defaults,
    ModelConfig,
    ProviderConfig,
    Timeout,
    WorkspaceConfig,
)

if TYPE_CHECKING:
    import httpx

    from tether.engine.providers.common import HTTPProvider
    from tether.engine.providers.retry import RetryPolicy

log = logging.getLogger("tether.config")
_T = TypeVar("_T", bound=msgspec.Struct)

CONFIG_ENV = "TETHER_CONFIG"
MODEL_ENV = "TETHER_MODEL"
DEFAULT_TIMEOUT = 600.0  # seconds; a slow model may think for minutes between deltas
DEFAULT_CONNECT_TIMEOUT = 10.0

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "deepseek": "https://api.deepseek.com",
    "deepseek-responses": "https://api.deepseek.com",
    "deepseek-anthropic": "https://api.deepseek.com/anthropic",
}
# (provider name and kind, key variable, base URL variable): usable with no file at all. Either
# variable adds the provider: a base URL alone is a server that wants no key (Ollama, llama.cpp,
# vLLM; or a gateway that adds credentials itself), so requests carry none.
ENV_PROVIDERS = (
    ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    ("deepseek", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL"),
)

_SECTIONS = ("providers", "models", "defaults", "workspace")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """TETHER_CONFIG when set, else `config.toml` in the platform's user config directory."""
    env = os.environ if env is None else env
    override = env.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("tether", appauthor=False)) / "config.toml"


def example_config() -> str:
    """The commented example `tether config init` writes; every example in it is valid."""
    return Path(__file__).with_name("config_example.toml").read_text(encoding="utf-8")


def write_example(path: Path, *, force: bool = False) -> None:
    """Write the example config; FileExistsError unless `force` when `path` exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w" if force else "x", encoding="utf-8") as f:
        f.write(example_config())


# --- errors -----------------------------------------------------------------------------------


class ConfigIssue(msgspec.Struct, frozen=True):
    line: int | None
    key: str  # dotted, quoted where TOML would quote ("" for a file-level problem)
    message: str

    def render(self, path: Path | None) -> str:
        where = str(path) if path is not None else "<config>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(Exception):
    """The file cannot be used; `issues` lists every problem found, each with key and line."""

    def __init__(self, path: Path | None, issues: list[ConfigIssue]) -> None:
        super().__init__("\n".join(i.render(path) for i in issues))
        self.path = path
        self.issues = issues


def key_name(key: Key) -> str:
    return ".".join(p if _BARE_KEY.match(p) else msgspec.json.encode(p).decode() for p in key)


# --- loading ----------------------------------------------------------------------------------


class Config(msgspec.Struct):
    """A validated config file, with where each of its keys is written."""

    file: ConfigFile
    path: Path | None = None
    lines: dict[Key, int] = msgspec.field(default_factory=dict[Key, int])

    def issue(self, key: Key, message: str) -> ConfigIssue:
        return ConfigIssue(line_of(self.lines, key), key_name(key), message)


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
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, [_syntax_issue(exc, text)]) from None
    lines = index_keys(text)
    checker = _Checker(lines)
    file = checker.file(doc)
    if checker.issues:
        raise ConfigError(path, sorted(checker.issues, key=lambda i: i.line or 0))
    return Config(file, path, lines)


def _syntax_issue(exc: tomllib.TOMLDecodeError, text: str) -> ConfigIssue:
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


class _Checker:
    """Converts the parsed TOML table by table, so one run reports every problem with its key."""

    def __init__(self, lines: dict[Key, int]) -> None:
        self.lines = lines
        self.issues: list[ConfigIssue] = []

    def issue(self, key: Key, message: str) -> None:
        self.issues.append(ConfigIssue(line_of(self.lines, key), key_name(key), message))

    def file(self, doc: dict[str, Any]) -> ConfigFile:
        for name in doc:
            if name not in _SECTIONS:
                self.issue((name,), f"unknown key (expected one of: {', '.join(_SECTIONS)})")
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
        return ConfigFile(
            providers=providers, models=models, defaults=defaults, workspace=workspace
        )

    def _section(self, doc: dict[str, Any], name: str, kind: type[_T]) -> _T:
        table = doc.get(name, {})
        if not isinstance(table, dict):
            self.issue((name,), "expected a table")
            return kind()
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

    def _provider(self, name: str, table: dict[str, Any]) -> ProviderConfig | None:
        key = ("providers", name)
        if not _NAME.match(name):
            self.issue(key, "a provider name uses letters, digits, '_', '-' and '.' only")
            return None
        self._provider_rules(key, table)
        return self.convert(table, ProviderConfig, key)

    def _provider_rules(self, key: Key, table: dict[str, Any]) -> None:
        """What the types cannot say; checked on the raw table so it is reported alongside
        any type error."""
        if "api_key" in table and "api_key_env" in table:
            self.issue((*key, "api_key_env"), "set api_key or api_key_env, not both")
        env_name = table.get("api_key_env")
        if isinstance(env_name, str) and not _ENV_NAME.match(env_name):
            # Never echo the value: it is most likely the key itself, pasted in the wrong place.
            self.issue(
                (*key, "api_key_env"),
                "expected the name of an environment variable (a key itself goes in api_key)",
            )
        url = table.get("base_url")
        if isinstance(url, str) and not url.startswith(("http://", "https://")):
            self.issue((*key, "base_url"), "expected an http:// or https:// URL")

    def _model(self, model_id: str, table: dict[str, Any]) -> ModelConfig | None:
        key = ("models", model_id)
        provider, _, model = model_id.partition(":")
        if not (_NAME.match(provider) and model):
            self.issue(key, 'a model is named "provider:model", e.g. "openai:gpt-4.1"')
            return None
        return self.convert(table, ModelConfig, key)

    def convert(self, table: dict[str, Any], kind: type[_T], key: Key) -> _T | None:
        """`table` as a `kind` Struct, checked key by key so that every bad key is reported
        (msgspec stops at a table's first error)."""
        fields = {f.name: f for f in msgspec.structs.fields(kind)}
        values: dict[str, Any] = {}
        ok = True
        for name, value in table.items():
            info = fields.get(name)
            if info is None:
                self.issue((*key, name), f"unknown key (expected one of: {', '.join(fields)})")
                ok = False
                continue
            try:
                values[name] = msgspec.convert(value, info.type)
            except msgspec.ValidationError as exc:
                where, message = _explain(str(exc), info.type)
                self.issue((*key, name, *where), message)
                ok = False
        for name, info in fields.items():
            if info.required and name not in table:
                self.issue((*key, name), "missing (it is required)")
                ok = False
        return kind(**values) if ok else None


# --- turning msgspec's messages into a TOML user's -------------------------------------------

_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "object": "a table",
    "array": "an array",
}


def _explain(message: str, tp: Any) -> tuple[Key, str]:
    """msgspec's "Expected `int`, got `str` - at `$.a`" for a value of type `tp`, as the path
    below the value and a message in TOML's words: (("a",), "expected an integer, got a string")."""
    text, _, at = message.partition(" - at `$")
    where: Key = tuple(re.findall(r"\.([A-Za-z0-9_]+)", at))
    if m := re.fullmatch(r"Object contains unknown field `(.+)`", text):
        names = ", ".join(f.name for s in _structs(tp) for f in msgspec.structs.fields(s))
        return (*where, m[1]), f"unknown key (expected one of: {names})"
    if m := re.fullmatch(r"Invalid enum value (.+)", text):
        return where, f"invalid value {m[1]} (expected one of: {', '.join(_literals(tp))})"
    if m := re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)`", text):
        wanted = [_TYPE_WORDS.get(t, t) for t in m[1].split(" | ") if t != "null"]
        return where, f"expected {' or '.join(wanted)}, got {_TYPE_WORDS.get(m[2], m[2])}"
    if m := re.fullmatch(r"Expected `[^`]+` (.+)", text):
        return where, f"must be {m[1]}"
    return where, text.replace("`", "")


def _structs(tp: Any) -> list[type[msgspec.Struct]]:
    """The Struct types a field's type allows (our schema nests one level at most)."""
    return [t for t in (tp, *get_args(tp)) if isinstance(t, type) and issubclass(t, msgspec.Struct)]


def _literals(tp: Any) -> list[str]:
    """The strings a Literal inside `tp` allows (looking through lists and options)."""
    found: list[str] = []
    pending: list[Any] = [tp]
    while pending:
        args = get_args(pending.pop())
        if args and all(isinstance(a, str) for a in args):
            found.extend(args)
        else:
            pending.extend(args)
    return found


# --- resolving: the providers and models in effect --------------------------------------------


class Provider(msgspec.Struct, frozen=True):
    name: str
    kind: str
    base_url: str
    api_key: str  # "" sends no credentials (a local server)
    key_source: str  # where the key comes from, for display: "env OPENAI_API_KEY", "config", ...
    origin: str  # "config" or "environment"
    timeout: float | Timeout | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    builtin_models: bool = True


class Setup(msgspec.Struct):
    """Providers and models from the file and the environment, before the catalog is built."""

    providers: dict[str, Provider]
    models: dict[str, ModelInfo]  # "provider:model" -> info, in provider order
    file_default: str | None = None


def env_providers(env: Mapping[str, str]) -> dict[str, Provider]:
    """One provider per API-key or base-URL variable that is set (non-empty)."""
    found: dict[str, Provider] = {}
    for name, key_var, url_var in ENV_PROVIDERS:
        key, url = env.get(key_var, ""), env.get(url_var, "")
        if key or url:
            source = f"env {key_var}" if key else "none"
            found[name] = Provider(
                name, name, url or DEFAULT_BASE_URLS[name], key, source, "environment"
            )
    return found


def resolve(config: Config | None, *, env: Mapping[str, str]) -> Setup:
    """Merge the environment's providers with the file's (the file wins a shared name)."""
    file = config.file if config is not None else ConfigFile()
    providers = env_providers(env)
    for name, p in file.providers.items():
        providers[name] = _file_provider(name, p, env)
    issues: list[ConfigIssue] = []
    models = _models(providers, file, config, issues)
    default = file.defaults.model
    if config is not None and default and ":" in default:
        owner = default.partition(":")[0]
        if owner not in providers:
            issues.append(config.issue(("defaults", "model"), _no_provider(owner, providers)))
    if issues:
        raise ConfigError(config.path if config is not None else None, issues)
    return Setup(providers, models, default)


def _file_provider(name: str, p: ProviderConfig, env: Mapping[str, str]) -> Provider:
    if p.api_key is not None:
        key, source = p.api_key, "config"
    elif p.api_key_env is not None:
        key, source = env.get(p.api_key_env, ""), f"env {p.api_key_env}"
    else:
        key, source = "", "none"
    url = p.base_url or DEFAULT_BASE_URLS[p.kind]
    return Provider(
        name, p.kind, url, key, source, "config", p.timeout, dict(p.headers), p.builtin_models
    )


def _no_provider(name: str, providers: Mapping[str, Provider]) -> str:
    if not providers:
        return f"no provider named {name!r}: set its API key variable or add [providers.{name}]"
    return f"no provider named {name!r} (known: {', '.join(providers)})"


def _models(
    providers: dict[str, Provider],
    file: ConfigFile,
    config: Config | None,
    issues: list[ConfigIssue],
) -> dict[str, ModelInfo]:
    specs: dict[str, ModelConfig] = {}
    for name, p in providers.items():
        if p.builtin_models:
            for model, spec in BUILTIN_MODELS[p.kind].items():
                specs[f"{name}:{model}"] = spec
    for model_id, spec in file.models.items():
        assert config is not None  # file models come from a file
        owner = model_id.partition(":")[0]
        if owner not in providers:
            issues.append(config.issue(("models", model_id), _no_provider(owner, providers)))
            continue
        base = specs.get(model_id)
        specs[model_id] = spec if base is None else _overlay(base, spec)
        issues.extend(_check_limits(config, model_id, specs[model_id]))
    return {model_id: model_info(model_id, spec) for model_id, spec in specs.items()}


def _overlay(base: ModelConfig, spec: ModelConfig) -> ModelConfig:
    """`base` with every field `spec` sets."""
    changes = {f: v for f in spec.__struct_fields__ if (v := getattr(spec, f)) is not None}
    return msgspec.structs.replace(base, **changes)


def _check_limits(config: Config, model_id: str, spec: ModelConfig) -> Iterator[ConfigIssue]:
    """Checks that need the merged entry: a file entry may override half of a built-in one."""
    key = ("models", model_id)
    levels = spec.reasoning or []
    if spec.default_reasoning is not None and spec.default_reasoning not in levels:
        listed = ", ".join(levels) or "none"
        yield config.issue(
            (*key, "default_reasoning"), f"is not one of the model's reasoning levels ({listed})"
        )
    window, output = spec.context_window, spec.max_output_tokens
    if window is not None and output is not None and output > window:
        yield config.issue((*key, "max_output_tokens"), f"exceeds context_window ({window})")


def model_info(model_id: str, spec: ModelConfig | None = None) -> ModelInfo:
    """A catalog entry; unset fields take ModelInfo's defaults."""
    spec = spec or ModelConfig()
    provider, _, model = model_id.partition(":")
    base = ModelInfo(model_id, spec.name or f"{model} ({provider})")
    return ModelInfo(
        id=model_id,
        name=base.name,
        context_window=spec.context_window or base.context_window,
        max_output_tokens=spec.max_output_tokens or base.max_output_tokens,
        images=bool(spec.images),
        reasoning_levels=tuple(spec.reasoning or ()),
        default_reasoning=spec.default_reasoning,
        input_price=spec.input_price,
        output_price=spec.output_price,
        cached_input_price=spec.cached_input_price,
        currency=spec.currency or base.currency,
        reasons=spec.reasons,
        max_tokens_param=spec.max_tokens_param,
        thinking=spec.thinking,
    )


# --- the catalog ------------------------------------------------------------------------------


def build_catalog(
    config: Config | None,
    *,
    script: str | None = None,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelCatalog:
    """The demo model (always), a scripted model when `script` is given, and every model of
    every provider. Raises ConfigError for a file whose references do not resolve."""
    env = os.environ if env is None else env
    catalog = catalog_for(
        resolve(config, env=env), script=script, model_override=model_override, env=env
    )
    if config is not None and config.file.workspace.path_denylist is not None:
        catalog.path_denylist = tuple(config.file.workspace.path_denylist)
    return catalog


def catalog_for(
    setup: Setup,
    *,
    script: str | None = None,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelCatalog:
    env = os.environ if env is None else env
    catalog = builtin_catalog(script)
    clients = _Clients()
    for info in setup.models.values():
        catalog.add(info, _factory(setup.providers[provider_of(info.id)], info, clients))
    for provider in setup.providers.values():
        catalog.providers[provider.name] = _handle(provider, clients)
    choices = [("--model", model_override)]
    if script is None:  # an explicit script outranks the ambient choices
        choices += [(MODEL_ENV, env.get(MODEL_ENV)), ("[defaults] model", setup.file_default)]
    if not _choose_default(catalog, setup, choices, clients) and script is None:
        _default_to_a_provider(catalog, setup)
    return catalog


def _default_to_a_provider(catalog: ModelCatalog, setup: Setup) -> None:
    """Nothing chosen: a configured provider's first model (its kind's first built-in, else the
    first listed for it) rather than the demo. With several, the file's come first."""
    ordered = sorted(setup.providers.values(), key=lambda p: p.origin != "config")
    for provider in ordered:
        first = next((m for m in setup.models if provider_of(m) == provider.name), None)
        if first is not None:
            catalog.default = first
            many = len(setup.providers) > 1
            catalog.default_source = (
                f"the first model of {'the first' if many else 'the only'} configured provider"
            )
            return


def load_catalog(
    *,
    script: str | None = None,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelCatalog:
    """The catalog `tether acp` serves. A broken config file does not stop the agent: it is
    logged, left out (the environment and the demo still work), and kept in `warnings`."""
    env = os.environ if env is None else env
    try:
        catalog = build_catalog(
            load_config(env=env), script=script, model_override=model_override, env=env
        )
    except ConfigError as exc:
        catalog = build_catalog(None, script=script, model_override=model_override, env=env)
        catalog.warnings.insert(0, f"the config file was ignored:\n{exc}")
    for warning in catalog.warnings:
        log.warning("%s", warning)
    return catalog


def provider_of(model_id: str) -> str:
    return model_id.partition(":")[0]


def _choose_default(
    catalog: ModelCatalog,
    setup: Setup,
    choices: list[tuple[str, str | None]],
    clients: _Clients,
) -> bool:
    """The first choice that names a usable model becomes the default; the others are noted.
    False when none did."""
    for source, wanted in choices:
        if not wanted:
            continue
        found, why = _find_model(catalog, setup, wanted, clients)
        if found is not None:
            catalog.default = found
            catalog.default_source = source
            return True
        catalog.warnings.append(f"{source}: unknown model {wanted!r} ({why}); ignored")
    return False


def _find_model(
    catalog: ModelCatalog, setup: Setup, wanted: str, clients: _Clients
) -> tuple[str | None, str]:
    """`wanted` as a catalog id, adding "provider:model" for a known provider when unlisted;
    a bare model name is accepted when exactly one provider offers it."""
    if wanted in catalog:
        return wanted, ""
    if ":" in wanted:
        name, _, model = wanted.partition(":")
        provider = setup.providers.get(name)
        if provider is None or not model:
            return None, _no_provider(name, setup.providers)
        info = model_info(wanted)
        catalog.add(info, _factory(provider, info, clients))
        return wanted, ""
    matches = [i for i in catalog.infos if i.partition(":")[2] == wanted]
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        return None, f"offered by {', '.join(matches)}: name the provider"
    return None, "no provider offers it; name it as provider:model"


# --- opening a model --------------------------------------------------------------------------


class _Clients:
    """One HTTP client per provider, made on first use (inside the running event loop) and
    shared by its sessions: connections are reused and none is left unclosed per session."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}

    def get(self, provider: Provider) -> httpx.AsyncClient:
        client = self._clients.get(provider.name)
        if client is None:
            import httpx

            client = httpx.AsyncClient(timeout=http_timeout(provider))
            self._clients[provider.name] = client
        return client


def _factory(provider: Provider, info: ModelInfo, clients: _Clients) -> Callable[[], LLM]:
    model = info.id.partition(":")[2]
    return lambda: make_adapter(provider, model, info, client=clients.get(provider))


def _handle(provider: Provider, clients: _Clients) -> ProviderHandle:
    """The provider for model discovery: its models open on the shared client."""
    return ProviderHandle(
        provider.name,
        provider.kind,
        provider.base_url,
        keyless=not provider.api_key,
        open=lambda model, info: make_adapter(provider, model, info, client=clients.get(provider)),
    )


def http_timeout(provider: Provider) -> float | httpx.Timeout:
    t = provider.timeout
    if t is None or isinstance(t, float | int):
        return DEFAULT_TIMEOUT if t is None else float(t)
    import httpx

    return httpx.Timeout(t.read or DEFAULT_TIMEOUT, connect=t.connect or DEFAULT_CONNECT_TIMEOUT)


def make_adapter(
    provider: Provider,
    model: str,
    info: ModelInfo,
    *,
    client: httpx.AsyncClient | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | httpx.Timeout | None = None,
) -> HTTPProvider:
    """The adapter for `provider`'s wire API. Imported here: a session on the demo model never
    loads httpx."""
    timeout = http_timeout(provider) if timeout is None else timeout
    args = (provider.base_url, provider.api_key, model, info, timeout, client)
    named = {"retry": retry, "name": provider.name, "headers": provider.headers}
    deepseek = provider.kind.startswith("deepseek")
    if provider.kind.endswith("anthropic"):
        from tether.engine.providers.anthropic import AnthropicMessages

        return AnthropicMessages(*args, deepseek=deepseek, **named)
    if provider.kind.endswith("responses"):
        from tether.engine.providers.openai_responses import OpenAIResponses

        return OpenAIResponses(*args, deepseek=deepseek, **named)
    from tether.engine.providers.openai_chat import OpenAIChat

    return OpenAIChat(*args, deepseek=deepseek, **named)


assert set(DEFAULT_BASE_URLS) == set(PROVIDER_KINDS) == set(BUILTIN_MODELS)
