"""What `tether doctor` reports: can tether reach a model, and which?

`check` validates the config file (each error with its key and line), resolves the providers
and the models the editor's picker will offer, the web tools and their providers
(`web/web_report.py`), the sandbox and the session database; `probe_all` sends each provider
one tiny streamed request through the same adapter a session uses, timing it or keeping the
provider's own error message. The CLI renders the report (`tether/cli/doctor.py`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tether.engine.config.adapters import make_adapter
from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.model_kinds import KINDS
from tether.engine.config.resolve import Provider, Setup, model_info, provider_of
from tether.engine.mcp.server_state import ServerStatus
from tether.engine.providers.base import ModelInfo
from tether.engine.sandbox.detect import SandboxInfo, detect
from tether.engine.sessions.store_check import StoreHealth, check_store
from tether.engine.skills.skill_discovery import Discovery, discover
from tether.engine.skills.skill_roots import SkillPlaces, SkillRoot
from tether.engine.web.web_report import WebReport, web_report
from tether.errors import ConfigIssue, ProviderError
from tether.paths import config_path, data_dir

PROBE_PROMPT = "Reply with the single word: ready"
PROBE_TOKENS = 16  # small, and no lower than any API's floor (Responses refuses < 16)
PROBE_TIMEOUT = 30.0  # seconds for the whole request; a provider may be slow, not stuck


@dataclass
class Probe:
    provider: str
    model: str
    status: Literal["ok", "error", "skipped"] = "skipped"
    total_ms: int | None = None
    first_token_ms: int | None = None
    reply: str = ""
    error: str = ""


@dataclass
class Report:
    path: Path
    found: bool
    issues: list[ConfigIssue]
    setup: Setup
    catalog: ModelCatalog
    web: WebReport
    sandbox: SandboxInfo = field(default_factory=lambda: SandboxInfo("none"))
    store: StoreHealth = field(default_factory=lambda: StoreHealth(Path("tether.db"), "absent"))
    warnings: list[str] = field(default_factory=list[str])
    probes: list[Probe] = field(default_factory=list[Probe])
    log_file: Path | None = None  # where `tether acp` writes its log
    # With --probe: the chat models each provider's model list names, or why there is none.
    listed: dict[str, list[str] | str] = field(default_factory=dict[str, list[str] | str])
    # The skills a session in the current directory would find, and where it looks.
    skill_roots: list[SkillRoot] = field(default_factory=list[SkillRoot])
    skills: Discovery = field(default_factory=lambda: Discovery([], [], []))
    # What stops `tether ask` besides the files: an unknown default model, an unwritable home.
    fatal: list[str] = field(default_factory=list[str])
    project: Path | None = None  # where a project config file is looked for
    # The config's MCP servers, each started and stopped again: its state and tools.
    mcp: list[ServerStatus] = field(default_factory=list[ServerStatus])

    @property
    def healthy(self) -> bool:
        probes_ok = all(p.status != "error" for p in self.probes)
        config_ok = not self.issues and not self.fatal
        mcp_ok = all(s.state == "ready" for s in self.mcp)
        return config_ok and probes_ok and mcp_ok and self.store.state != "damaged"


def check(
    *, env: Mapping[str, str], model_override: str | None = None, cwd: Path | None = None
) -> Report:
    """What `tether acp` would serve with this environment (each bad key left out), and what
    would stop `tether ask` (`Report.fatal`)."""
    from tether.engine.config.layers import project_config_path
    from tether.engine.config.startup_check import startup_check

    path = config_path(env)
    found = startup_check(env, cwd, model=model_override)
    setup, catalog = found.setup, found.catalog
    web = web_report(setup.web, env)
    sandbox = detect(setup.sandbox.mechanism)
    warnings = [*catalog.warnings, *_key_warnings(setup), *web.warnings()]
    if not sandbox.confines:
        warnings.append(
            f"no sandbox confines commands ({sandbox.why}): every command but known read-only "
            "ones asks first, in every mode"
        )
    store = check_store(data_dir(env) / "tether.db")
    issues = [*setup.fatal, *setup.issues]
    report = Report(path, path.exists(), issues, setup, catalog, web, sandbox, store, warnings)
    report.fatal = [p for p in found.fatal if p not in {i.render() for i in setup.fatal}]
    report.project = project_config_path(env, cwd)
    skills = setup.skills
    places = SkillPlaces(data_dir(env) / "skills", tuple(skills.paths), enabled=skills.enabled)
    report.skill_roots = places.roots(Path.cwd())
    report.skills = discover(report.skill_roots)
    return report


def _key_warnings(setup: Setup) -> list[str]:
    return [
        f"provider {p.name}: {p.key_source.removeprefix('env ')} is not set; "
        "its requests carry no API key"
        for p in setup.providers.values()
        if p.key_source.startswith("env ") and not p.api_key
    ]


def key_description(p: Provider) -> str:
    """Where the key comes from, never the key: `env OPENAI_API_KEY (set)`, `config (sk-…abcd)`,
    or `none` with what that means."""
    if p.key_source == "config":
        return f"config ({mask(p.api_key)})"
    if p.key_source.startswith("env "):
        return f"{p.key_source} ({'set' if p.api_key else 'not set'})"
    env = KINDS[p.kind].env
    if p.origin == "environment" and env is not None:
        return (
            f"none ({env.key} is not set: requests carry no credentials, as a local server expects)"
        )
    return "none (requests carry no credentials)"


def mask(key: str) -> str:
    """Enough of a key to tell two apart, too little to use: a prefix and the last four."""
    if len(key) >= 16:
        return f"{key[:3]}…{key[-4:]}"
    return "…" if key else "empty"


# --- probing ----------------------------------------------------------------------------------


async def probe_all(
    setup: Setup, catalog: ModelCatalog, listed: dict[str, list[str] | str] | None = None
) -> list[Probe]:
    """One request per provider, all at once, on the model a session would run on (`listed`:
    the providers' own lists); results in provider order."""
    import anyio

    providers = list(setup.providers.values())
    results = [Probe(p.name, "") for p in providers]

    async def one(i: int) -> None:
        info = _probe_model(providers[i], catalog, (listed or {}).get(providers[i].name))
        if info is not None:
            results[i] = await probe(providers[i], info)

    async with anyio.create_task_group() as tg:
        for i in range(len(providers)):
            tg.start_soon(one, i)
    return results


def _probe_model(
    provider: Provider, catalog: ModelCatalog, listed: list[str] | str | None
) -> ModelInfo | None:
    """The provider's model that is the default, else its first; on a keyless server that
    lists others only, the one discovery would pick (the first it lists)."""
    name = provider.name
    if provider_of(catalog.default) == name and catalog.default in catalog.infos:
        info = catalog.infos[catalog.default]
    else:
        info = next((i for i in catalog.infos.values() if provider_of(i.id) == name), None)
    if info is None or provider.api_key or not isinstance(listed, list):
        return info
    from tether.engine.providers.discovery import local_fallback

    instead = local_fallback(info.id.partition(":")[2], listed)
    if instead is None:
        return info
    return catalog.infos.get(f"{name}:{instead}") or model_info(f"{name}:{instead}")


async def probe(provider: Provider, info: ModelInfo) -> Probe:
    """Stream one tiny request through the real adapter, without retries: a failure should be
    reported as the provider said it, not waited out."""
    import anyio
    import httpx

    from tether.engine.history import TextPart, UserMessage
    from tether.engine.providers.base import ChatRequest, TextDelta, ThoughtDelta
    from tether.engine.providers.retry import RetryPolicy

    result = Probe(provider.name, info.id)
    model = info.id.partition(":")[2]
    timeout = httpx.Timeout(PROBE_TIMEOUT, connect=min(10.0, PROBE_TIMEOUT))
    adapter = make_adapter(
        provider, model, info, retry=RetryPolicy(max_attempts=1), timeout=timeout
    )
    request = ChatRequest(
        system="",
        messages=[UserMessage([TextPart(PROBE_PROMPT)])],
        tools=[],
        max_output_tokens=PROBE_TOKENS,
    )
    start = time.perf_counter()
    reply: list[str] = []
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            async with aclosing(adapter.stream(request)) as events:
                async for event in events:
                    if (
                        isinstance(event, TextDelta | ThoughtDelta)
                        and result.first_token_ms is None
                    ):
                        result.first_token_ms = _ms_since(start)
                    if isinstance(event, TextDelta):
                        reply.append(event.text)
        result.status, result.total_ms, result.reply = "ok", _ms_since(start), "".join(reply)
    except ProviderError as exc:
        result.status, result.error = "error", str(exc)
    except TimeoutError:
        result.status, result.error = "error", f"no complete answer within {PROBE_TIMEOUT:g} s"
    finally:
        await adapter.aclose()
    return result


async def list_all(setup: Setup) -> dict[str, list[str] | str]:
    """Every provider's model list (`GET /models`), all at once: ids, or the error."""
    import anyio

    listed: dict[str, list[str] | str] = {p: "" for p in setup.providers}

    async def one(provider: Provider) -> None:
        listed[provider.name] = await list_models(provider)

    async with anyio.create_task_group() as tg:
        for provider in setup.providers.values():
            tg.start_soon(one, provider)
    return listed


async def list_models(provider: Provider) -> list[str] | str:

    adapter = make_adapter(provider, "", ModelInfo(f"{provider.name}:", "model list"))
    try:
        return [m.id for m in await adapter.list_models()]
    except ProviderError as exc:
        return str(exc)
    finally:
        await adapter.aclose()


def _ms_since(start: float) -> int:
    return round((time.perf_counter() - start) * 1000)


# --- rendering --------------------------------------------------------------------------------
