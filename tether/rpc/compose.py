"""The composition root every protocol front shares: the config file and the environment made
into the engine's dependencies (the model catalog, the tools the `[web]` table enables with
their guidance in the system prompt, `ctx.web`, the store and the spill directory), closed once
the server stops; and the background chores a server runs beside its connection. `tether acp`
and `tether lsp` both start here, and neither front imports the other."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from tether.engine.sessions.deps import EngineDeps
    from tether.engine.sessions.renderings import Renderer
    from tether.engine.web.deferred_web import DeferredWeb
    from tether.rpc.startup import ServeOptions
    from tether.schemas.config import AgentConfig
    from tether.schemas.web import WebConfig

SPILL_DAYS = 7.0  # default age after which a session's spill files are removed


class Composed(msgspec.Struct):
    deps: EngineDeps
    web: DeferredWeb
    spill_days: float = SPILL_DAYS

    async def aclose(self) -> None:
        """The providers' HTTP clients and web access, closed once the server has stopped."""
        await self.deps.catalog.aclose()
        await self.web.aclose()


def compose(
    options: ServeOptions,
    renderer: Renderer | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Composed:
    """The options' `script` (a scripted-provider file) and `model` ("provider:model") choose
    the default model over the environment's; `renderer`: the front's, whose renderings the
    store keeps for replays; `home`: where the store and spill files go (default: the data
    dir)."""
    from tether.engine.config.layers import SHOWN_ENV
    from tether.engine.config.load import catalog_for, log_warnings
    from tether.engine.config.resolve import load_setup
    from tether.engine.local import env_allowlist
    from tether.engine.registry import Registry
    from tether.engine.sessions.deps import EngineDeps
    from tether.engine.sessions.store import Store
    from tether.engine.skills.skill_roots import SkillPlaces
    from tether.engine.system_prompt import PERSONA
    from tether.engine.turn import turn_config
    from tether.engine.web.deferred_web import DeferredWeb
    from tether.engine.workspace import configured_grants
    from tether.paths import data_dir
    from tether.tools import deferred_catalog, retired

    env = os.environ if env is None else env
    home = data_dir() if home is None else home
    setup = load_setup(env)  # each bad key is logged and left out; an unusable file too
    if env.get(SHOWN_ENV):  # `tether ask` printed them already
        setup.logged += setup.warnings
        setup.warnings = []
    setup.agent = _agent_flags(setup.agent, options)
    # What the commands of this process may see of its environment (a broken file: the
    # built-in allowlist, and no provider key the environment or the file names).
    env_allowlist.configure(setup.command_env, setup.secret_env)
    catalog = catalog_for(setup, script=options.script, model_override=options.model, env=env)
    log_warnings(catalog, setup.logged)
    # Each tool loads when first called; the web is built when a web tool first calls it.
    tools = deferred_catalog(setup.web, home / "cache", skills=setup.skills.enabled)
    web = DeferredWeb(setup.web, env)
    deps = EngineDeps(
        catalog=catalog,
        registry_factory=lambda: Registry(tools, explainers=[retired]),
        store=Store(home / "tether.db", renderer),
        spill_root=home / "spill",
        turn=turn_config(setup.agent, PERSONA, _web_sections(setup.web)),
        web=web,
        command_denylist=setup.command_denylist,
        mcp_servers=setup.mcp_servers,
        sandbox=setup.sandbox,
        agent=setup.agent,
        skills=SkillPlaces(
            home / "skills",
            tuple(setup.skills.paths),
            enabled=setup.skills.enabled,
            allow_write=setup.skills.allow_write,
        ),
        trash=setup.trash,
        allowed_paths=tuple(configured_grants(setup.agent.allow_paths)),
    )
    days = float(env.get("TETHER_SPILL_DAYS") or setup.spill_days or SPILL_DAYS)
    return Composed(deps, web, days)


def _agent_flags(agent: AgentConfig, options: ServeOptions) -> AgentConfig:
    """`[agent]` with the command line's `--max-rounds`, `--auto-continue` and
    `--max-retry-seconds` over it."""
    if options.max_rounds is not None:
        agent = msgspec.structs.replace(agent, max_rounds=options.max_rounds)
    if options.auto_continue:
        agent = msgspec.structs.replace(agent, auto_continue_limits=True)
    if options.max_retry_seconds is not None:
        agent = msgspec.structs.replace(agent, retry_max_total=float(options.max_retry_seconds))
    return agent


def _web_sections(web: WebConfig) -> tuple[str, ...]:
    from tether.tools.web_guidance import web_guidance

    guidance = web_guidance(web)
    return (f"# Web\n{guidance}",) if guidance else ()


async def expire_spill(root: Path, days: float) -> None:
    """Spill directories of sessions untouched for `days` are removed, in the background."""
    import anyio

    from tether.engine.local.private_files import expire

    await anyio.to_thread.run_sync(expire, root, days)
