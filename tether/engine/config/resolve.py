"""The environment and the file, resolved: the providers, models and web settings in effect.

Sources, later ones winning: providers from the environment (each kind's key or base-URL
variable, `kinds.py`), then the file's `[providers.NAME]` tables. Each provider offers its kind's
built-in models (unless `builtin_models = false`) plus every `[models."NAME:model"]` entry,
which may also override a built-in model's fields. `[workspace]` and `[web]` are taken as
written; the environment fills in what `[web]` leaves out when the web capability is built
(`tether.engine.web.build`). `[mcp_servers]` become ServerSpecs, their `${VAR}` references
replaced from the environment (`mcp_servers.py`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import msgspec

from tether.engine.config.command_env import command_env_issues, secret_variables
from tether.engine.config.file import Config
from tether.engine.config.mcp_servers import configured_servers
from tether.engine.config.model_kinds import KINDS, env_kinds, hosted_issues
from tether.engine.mcp.spec import ServerSpec
from tether.engine.providers.base import ModelInfo
from tether.engine.seam import BUILTIN_COMMAND_DENYLIST, CommandDenylist
from tether.errors import ConfigError, ConfigIssue
from tether.schemas.config import (
    REASONING_LEVELS,
    AgentConfig,
    ConfigFile,
    ModelConfig,
    ProviderConfig,
    SandboxConfig,
    SkillsConfig,
    Timeout,
)
from tether.schemas.web import WebConfig


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
    default_reasoning: str | None = None  # the provider's layer of a model's thinking
    hosted_tools: tuple[str, ...] = ()  # offered to its models unless a model says otherwise


class Setup(msgspec.Struct):
    """Providers, models and web settings from the file and the environment, before the
    catalog is built."""

    providers: dict[str, Provider]
    models: dict[str, ModelInfo]  # "provider:model" -> info, in provider order
    file_default: str | None = None
    web: WebConfig = msgspec.field(default_factory=WebConfig)
    path_denylist: tuple[str, ...] | None = None  # [workspace]; None: the built-in list
    spill_days: float | None = None  # [workspace]; None: the default
    command_denylist: CommandDenylist = BUILTIN_COMMAND_DENYLIST  # [workspace]
    command_env: tuple[str, ...] = ()  # [workspace]: more variables commands see
    # Variables commands never see: every provider's and web provider's key, and URLs that
    # may carry credentials.
    secret_env: frozenset[str] = frozenset()
    mcp_servers: tuple[ServerSpec, ...] = ()  # [mcp_servers], the enabled ones
    sandbox: SandboxConfig = msgspec.field(default_factory=SandboxConfig)  # [sandbox]
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)  # [agent]
    skills: SkillsConfig = msgspec.field(default_factory=SkillsConfig)  # [skills]
    trash: bool = True  # [trash] enabled: delete_path moves to the system trash
    warnings: list[str] = msgspec.field(default_factory=list[str])  # e.g. a file left out
    logged: list[str] = msgspec.field(default_factory=list[str])  # for the log, not the user
    # Bad keys, each left out alone; files that could not be used at all (`load_setup`).
    issues: list[ConfigIssue] = msgspec.field(default_factory=list[ConfigIssue])
    fatal: list[ConfigIssue] = msgspec.field(default_factory=list[ConfigIssue])
    user_file: Path | None = None  # the files read, for `tether config show` and doctor
    project_file: Path | None = None
    config: Config | None = None
    file_default_at: str = "[defaults] model"  # where the file's default model is written


def load_setup(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Setup:
    """What `tether acp` serves: the user's file and the project's, merged (`layers.py`). A bad
    key is reported and left out alone; a file that cannot be used at all is left out. Both
    are kept in `issues` / `fatal` and, as text, in `warnings`."""
    from tether.engine.config.layers import load_layers

    env = os.environ if env is None else env
    layers = load_layers(env, cwd)
    issues = list(layers.issues)
    setup = resolve(layers.config, env=env, issues=issues)
    setup.issues, setup.fatal = issues, list(layers.fatal)
    if layers.missing is not None:  # logged only: an editor's agent goes on without it
        setup.fatal.append(layers.missing)
        setup.logged.append(layers.missing.render())
    setup.user_file, setup.project_file = layers.user, layers.project
    setup.config = layers.config
    setup.warnings += [f"the config file was ignored: {i.render()}" for i in layers.fatal]
    setup.warnings += [f"config: {i.render()} (ignored)" for i in issues]
    return setup


def env_providers(env: Mapping[str, str]) -> dict[str, Provider]:
    """One provider per API-key or base-URL variable that is set (non-empty)."""
    found: dict[str, Provider] = {}
    for kind in env_kinds():
        assert kind.env is not None
        key, url = env.get(kind.env.key, ""), env.get(kind.env.base_url, "")
        if key or url:
            source = f"env {kind.env.key}" if key else "none"
            found[kind.name] = Provider(
                kind.name, kind.name, url or kind.base_url, key, source, "environment"
            )
    return found


def resolve(
    config: Config | None, *, env: Mapping[str, str], issues: list[ConfigIssue] | None = None
) -> Setup:
    """Merge the environment's providers with the file's (the file wins a shared name).
    Problems found here raise ConfigError, or with `issues` are added to it, each bad entry
    left out alone."""
    lenient = issues is not None
    issues = [] if issues is None else issues
    found = len(issues)
    file = config.file if config is not None else ConfigFile()
    providers = env_providers(env)
    for name, p in file.providers.items():
        providers[name] = _file_provider(name, p, env)
    models = _models(providers, file, config, issues)
    default = file.defaults.model
    if config is not None and default and ":" in default and not lenient:
        owner = provider_of(default)  # (leniently: the default model's choice reports it)
        if owner not in providers:
            issues.append(config.issue(("defaults", "model"), no_provider(owner, providers)))
    workspace = file.workspace
    if config is not None and any(not e.strip() for e in workspace.command_denylist):
        where = ("workspace", "command_denylist")
        issues.append(config.issue(where, "an entry is empty (expected `program [flags] [words]`)"))
        kept = [e for e in workspace.command_denylist if e.strip()]
        workspace = msgspec.structs.replace(workspace, command_denylist=kept)
    if config is not None:
        bad_env = command_env_issues(config)
        issues += bad_env
        if bad_env:
            workspace = msgspec.structs.replace(workspace, command_env=[])
    if len(issues) > found and not lenient:
        raise ConfigError(config.path if config is not None else None, issues)
    denied = None if workspace.path_denylist is None else tuple(workspace.path_denylist)
    commands = CommandDenylist(
        tuple(workspace.command_denylist), builtin=workspace.builtin_command_denylist
    )
    servers = configured_servers(config, env)
    setup = Setup(
        providers,
        models,
        default,
        file.web,
        denied,
        workspace.spill_days,
        commands,
        tuple(workspace.command_env),
        secret_variables(file),
        servers,
        sandbox=file.sandbox,
        agent=file.agent,
        skills=file.skills,
        trash=file.trash.enabled,
    )
    if config is not None and default:
        at = config.issue(("defaults", "model"), "")
        place = f"{at.path or config.path}" + (f":{at.line}" if at.line else "")
        setup.file_default_at = f"[defaults] model ({place})"
    return setup


def _file_provider(name: str, p: ProviderConfig, env: Mapping[str, str]) -> Provider:
    if p.api_key is not None:
        key, source = p.api_key, "config"
    elif p.api_key_env is not None:
        key, source = env.get(p.api_key_env, ""), f"env {p.api_key_env}"
    else:
        key, source = "", "none"
    url = p.base_url or KINDS[p.kind].base_url
    return Provider(
        name,
        p.kind,
        url,
        key,
        source,
        "config",
        p.timeout,
        dict(p.headers),
        p.builtin_models,
        p.default_reasoning,
        tuple(p.provider_tools),
    )


def no_provider(name: str, providers: Mapping[str, Provider]) -> str:
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
            for model, spec in KINDS[p.kind].models.items():
                specs[f"{name}:{model}"] = spec
    for model_id, spec in file.models.items():
        assert config is not None  # file models come from a file
        owner = provider_of(model_id)
        if owner not in providers:
            issues.append(config.issue(("models", model_id), no_provider(owner, providers)))
            continue
        base = specs.get(model_id)
        merged = spec if base is None else _overlay(base, spec)
        problems = list(_check_limits(config, model_id, merged))
        issues.extend(problems)
        if not problems:  # else the entry is left out (a built-in model keeps its own)
            specs[model_id] = merged
    infos = {
        model_id: _layered(model_id, spec, providers[provider_of(model_id)], file)
        for model_id, spec in specs.items()
    }
    if config is not None:
        issues.extend(_check_hosted(config, providers, file, infos))
    return infos


def _layered(model_id: str, spec: ModelConfig, provider: Provider, file: ConfigFile) -> ModelInfo:
    """The catalog entry with what the provider and `[agent]` add beneath the model's own."""
    own = file.models.get(model_id)
    level = layered_reasoning(
        spec,
        own.default_reasoning if own else None,
        provider.default_reasoning,
        file.agent.default_reasoning,
    )
    hosted = spec.provider_tools
    info = model_info(model_id, msgspec.structs.replace(spec, default_reasoning=level))
    tools = provider.hosted_tools if hosted is None else tuple(hosted)
    return msgspec.structs.replace(info, hosted_tools=tools)


def _check_hosted(
    config: Config, providers: dict[str, Provider], file: ConfigFile, infos: dict[str, ModelInfo]
) -> Iterator[ConfigIssue]:
    """Hosted tools asked of a wire API that runs none, where the file asks for them."""
    for name, p in file.providers.items():
        for problem in hosted_issues(p.kind, p.provider_tools):
            yield config.issue(("providers", name, "provider_tools"), problem)
    for model_id, m in file.models.items():
        info = infos.get(model_id)
        if info is None or (m.provider_tools is None and m.kind is None):
            continue
        kind = info.kind or providers[provider_of(model_id)].kind
        for problem in hosted_issues(kind, info.hosted_tools):
            where = "provider_tools" if m.provider_tools is not None else "kind"
            yield config.issue(("models", model_id, where), problem)


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
        kind=spec.kind,
        hosted_tools=tuple(spec.provider_tools or ()),
    )


def provider_of(model_id: str) -> str:
    return model_id.partition(":")[0]


# --- a model's thinking strength, layered model > provider > [agent] -------------------------

_RANK = {level: i for i, level in enumerate(REASONING_LEVELS)}


def clamp_level(level: str, levels: Sequence[str]) -> str | None:
    """`level` as the model has it: itself, else the strongest level below it, else the
    weakest the model has ("max" becomes "xhigh" on a model that stops there). None for a
    model without levels."""
    if not levels or level in levels:
        return level if levels else None
    below = [lvl for lvl in levels if _RANK.get(lvl, 0) < _RANK.get(level, 0)]
    return below[-1] if below else levels[0]


def layered_reasoning(
    spec: ModelConfig, own: str | None, provider: str | None, agent: str | None
) -> str | None:
    """The model's default level: its own entry's (`own`, as the file sets it), else the
    provider's, else `[agent]`'s, each clamped; else the built-in default in `spec`."""
    chosen = own or provider or agent
    if chosen is None:
        return spec.default_reasoning
    return clamp_level(chosen, spec.reasoning or [])
