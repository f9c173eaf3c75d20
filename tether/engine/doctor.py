"""`tether doctor`: can tether reach a model, and which?

It validates the config file (each error with its key and line), lists the providers (never a
key: only where it comes from, masked) and the models the editor's picker will offer, marks the
default, shows the web tools and their providers (`doctor_web`), and with `probe` sends each
provider one tiny streamed request through the same adapter a session uses, reporting the
latency or the provider's own error message.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import msgspec

from tether.engine.config.adapters import make_adapter
from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.file import load_config
from tether.engine.config.issues import ConfigError, ConfigIssue
from tether.engine.config.kinds import KINDS, env_kinds
from tether.engine.config.load import catalog_for
from tether.engine.config.resolve import Provider, Setup, model_info, provider_of, resolve
from tether.engine.doctor_web import WebReport, order_note, web_json, web_report, web_rows
from tether.engine.providers.base import ModelInfo
from tether.engine.sandbox.detect import SandboxInfo, detect
from tether.engine.sessions.store_check import StoreHealth, check_store, move_aside
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

    @property
    def healthy(self) -> bool:
        probes_ok = all(p.status != "error" for p in self.probes)
        return not self.issues and probes_ok and self.store.state != "damaged"


def run_doctor(
    *,
    probe: bool = False,
    as_json: bool = False,
    model_override: str | None = None,
    env: Mapping[str, str] | None = None,
    log_file: Path | None = None,
    out: TextIO,
    move_damaged_store: bool = False,
) -> int:
    """Print the report; 1 when the config file has errors, a probe failed or the session
    database is damaged (and was not moved aside)."""
    report = check(env=os.environ if env is None else env, model_override=model_override)
    report.log_file = log_file
    if move_damaged_store and report.store.state == "damaged":
        moved = move_aside(report.store.path)
        report.store = StoreHealth(report.store.path, "moved", f"moved aside to {moved}")
    if probe:
        import anyio

        report.listed = anyio.run(list_all, report.setup)
        report.probes = anyio.run(probe_all, report.setup, report.catalog, report.listed)
    out.write(render_json(report) if as_json else render_text(report))
    return 0 if report.healthy else 1


def check(*, env: Mapping[str, str], model_override: str | None = None) -> Report:
    """What `tether acp` would serve with this environment (a broken file is left out)."""
    path = config_path(env)
    issues: list[ConfigIssue] = []
    try:
        setup = resolve(load_config(path), env=env)
    except ConfigError as exc:
        issues = exc.issues
        setup = resolve(None, env=env)
    catalog = catalog_for(setup, model_override=model_override, env=env)
    web = web_report(setup.web, env)
    sandbox = detect(setup.sandbox.mechanism)
    warnings = [*catalog.warnings, *_key_warnings(setup), *web.warnings()]
    if not sandbox.confines:
        warnings.append(
            f"no sandbox confines commands ({sandbox.why}): every command but known read-only "
            "ones asks first, in every mode"
        )
    store = check_store(data_dir(env) / "tether.db")
    return Report(path, path.exists(), issues, setup, catalog, web, sandbox, store, warnings)


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
    from tether.engine.providers.base import ChatRequest, ProviderError, TextDelta, ThoughtDelta
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
    from tether.engine.providers.base import ProviderError

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


def render_text(r: Report) -> str:
    lines = [*_config_lines(r)]
    if r.log_file is not None:
        lines.append(f"log file     {r.log_file}")
    lines += ["", *_provider_lines(r.setup), "", *_model_lines(r.catalog), *_local_hint(r)]
    lines += ["", *_web_lines(r.web), "", *_sandbox_lines(r), "", *_store_lines(r.store)]
    if r.warnings:
        lines += ["", "warnings", *(f"  {w}" for w in r.warnings)]
    if r.probes:
        lines += ["", "probe (one short streamed request per provider)", *_probe_lines(r.probes)]
    if r.listed:
        lines += ["", "listed by the providers (GET /models)", *_listed_lines(r.listed)]
    return "\n".join(lines) + "\n"


def _config_lines(r: Report) -> list[str]:
    if r.issues:
        n = len(r.issues)
        head = (
            f"config file  {r.path}  ({n} error{'s' if n > 1 else ''}: the file is ignored until "
            "fixed; the environment's providers and the demo model still work)"
        )
        return [head, *(f"  error: {i.render(r.path)}" for i in r.issues)]
    if not r.found:
        return [f"config file  {r.path}  (none; `tether config init` writes an example)"]
    return [f"config file  {r.path}  (ok)"]


def _provider_lines(setup: Setup) -> list[str]:
    if not setup.providers:
        variables = ", ".join(k.env.key for k in env_kinds() if k.env is not None)
        return ["providers", f"  none: set one of {variables}, or add [providers.NAME]"]
    rows = [
        [p.name, p.kind, p.base_url, f"key {key_description(p)}", f"from {p.origin}"]
        for p in setup.providers.values()
    ]
    return ["providers", *_table(rows)]


def _model_lines(catalog: ModelCatalog) -> list[str]:
    rows = [
        [
            "*" if info.id == catalog.default else " ",
            info.id,
            f"context {info.context_window:,}",
            f"output {info.max_output_tokens:,}",
            f"images {'yes' if info.images else 'no'}",
            f"reasoning {_reasoning(info)}",
            f"price {_price(info)}",
        ]
        for info in catalog.infos.values()
    ]
    default = f"default: {catalog.default} ({_default_reason(catalog)})"
    return ["models (* = default)", *_table(rows), default]


def _local_hint(r: Report) -> list[str]:
    """A keyless server from the environment defaults to a built-in model id, which a local
    server may not know by that name."""
    provider = r.setup.providers.get(provider_of(r.catalog.default))
    if provider is None or provider.api_key or provider.origin != "environment":
        return []
    if not r.catalog.default_source.startswith("the first model"):
        return []
    return [
        f"  (a local server may name its models otherwise: TETHER_MODEL={provider.name}:NAME "
        "picks one; `tether doctor --probe` tries the default)"
    ]


def _web_lines(web: WebReport) -> list[str]:
    tools = f"  tools: {', '.join(web.tools) or 'none'}"
    return ["web", *_table(web_rows(web)), tools, f"  {order_note(web)}"]


def _store_lines(store: StoreHealth) -> list[str]:
    lines = [
        f"sessions     {store.path}: {store.state}" + (f" ({store.detail})" if store.detail else "")
    ]
    if store.state == "damaged":
        lines.append(
            "  tether keeps this run's sessions in memory until it is fixed; "
            "`tether doctor --move-damaged-store` moves it aside (kept) for a new one"
        )
    return lines


def _sandbox_lines(r: Report) -> list[str]:
    box = r.sandbox
    network = "allowed" if r.setup.sandbox.network else "off (a session option turns it on)"
    return [
        "sandbox (what confines the commands tether runs)",
        f"  {box.mechanism}: {box.summary}",
        f"  why: {box.why}",
        f"  network for commands: {network}",
    ]


def _default_reason(catalog: ModelCatalog) -> str:
    source = catalog.default_source
    if source == "nothing is configured":
        return "the offline demo: nothing is configured"
    if source.startswith("the first model"):
        return f"{source}; TETHER_MODEL or [defaults] model chooses another"
    return f"from {source}"


def _reasoning(info: ModelInfo) -> str:
    if not info.reasoning_levels:
        return "-"
    default = info.default_reasoning or info.reasoning_levels[0]
    return f"{'/'.join(info.reasoning_levels)} (default {default})"


def _price(info: ModelInfo) -> str:
    if info.input_price is None or info.output_price is None:
        return "-"
    cached = "" if info.cached_input_price is None else f", cached {info.cached_input_price:g}"
    per = f"{info.currency} per 1M tokens"
    return f"in {info.input_price:g} / out {info.output_price:g}{cached} {per}"


def _probe_lines(probes: list[Probe]) -> list[str]:
    rows: list[list[str]] = []
    for p in probes:
        if p.status == "ok":
            detail = f"{p.total_ms} ms (first token {p.first_token_ms} ms), reply {p.reply!r}"
        elif p.status == "error":
            detail = p.error
        else:
            detail = "no models to try"
        rows.append([p.provider, p.model or "-", p.status, detail])
    return _table(rows)


def _listed_lines(listed: dict[str, list[str] | str]) -> list[str]:
    rows: list[list[str]] = []
    for provider, ids in listed.items():
        if isinstance(ids, str):
            rows.append([provider, "error", ids])
        else:
            rows.append([provider, f"{len(ids)} models", ", ".join(ids) or "-"])
    return _table(rows)


def _table(rows: list[list[str]]) -> list[str]:
    """Rows with every column but the last padded to its widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)] if rows else []
    return [
        "  " + "  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]])
        for r in rows
    ]


def render_json(r: Report) -> str:
    data: dict[str, Any] = {
        "config": {
            "path": str(r.path),
            "found": r.found,
            "errors": [{**msgspec.structs.asdict(i), "text": i.render(r.path)} for i in r.issues],
        },
        "log_file": str(r.log_file) if r.log_file is not None else None,
        "providers": [
            {
                "name": p.name,
                "kind": p.kind,
                "base_url": p.base_url,
                "key": key_description(p),
                "origin": p.origin,
            }
            for p in r.setup.providers.values()
        ],
        "models": [
            {**msgspec.to_builtins(info), "default": info.id == r.catalog.default}
            for info in r.catalog.infos.values()
        ],
        "default": r.catalog.default,
        "default_reason": _default_reason(r.catalog),
        "web": web_json(r.web),
        "sandbox": {
            "mechanism": r.sandbox.mechanism,
            "program": r.sandbox.program,
            "summary": r.sandbox.summary,
            "why": r.sandbox.why,
            "network": r.setup.sandbox.network,
        },
        "store": {"path": str(r.store.path), "state": r.store.state, "detail": r.store.detail},
        "warnings": r.warnings,
        "probes": [asdict(p) for p in r.probes],
        "listed": r.listed,
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
