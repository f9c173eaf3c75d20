"""`tether doctor`: the report `tether.engine.diagnostics` makes, as text or JSON.

It shows the config file's errors (each with its key and line), the providers (never a key: only
where it comes from, masked), the models the editor's picker will offer with the default marked,
the web tools and their providers, the sandbox, the session database, the Agent Skills a
session in the current directory would find (and the broken ones), and with `--probe` each
provider's answer to one tiny streamed request (its latency or its own error message).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

import msgspec

from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.model_kinds import env_kinds
from tether.engine.config.resolve import Setup, provider_of
from tether.engine.diagnostics import (
    Probe,
    Report,
    check,
    key_description,
    list_all,
    probe_all,
)
from tether.engine.providers.base import ModelInfo
from tether.engine.sessions.store_check import StoreHealth, move_aside
from tether.engine.web.web_report import WebProviderStatus, WebReport
from tether.errors import ConfigIssue


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
    import anyio

    from tether.engine.mcp.server_check import check_servers

    report.mcp = anyio.run(check_servers, report.setup.mcp_servers, Path.cwd())
    if probe:
        report.listed = anyio.run(list_all, report.setup)
        report.probes = anyio.run(probe_all, report.setup, report.catalog, report.listed)
    out.write(render_json(report) if as_json else render_text(report))
    return 0 if report.healthy else 1


def render_text(r: Report) -> str:
    lines = [*_config_lines(r)]
    if r.log_file is not None:
        lines.append(f"log file     {r.log_file}")
    lines += ["", *_provider_lines(r.setup), "", *_model_lines(r.catalog), *_local_hint(r)]
    lines += ["", *_web_lines(r.web), "", *_sandbox_lines(r), "", *_search_lines()]
    lines += ["", "startup (`tether acp`, `tether lsp`)", f"  {_startup()[0]}"]
    lines += ["", *_store_lines(r.store), "", *_agent_lines(r.setup), "", *_skill_lines(r)]
    lines += ["", *_mcp_lines(r)]
    if r.warnings:
        lines += ["", "warnings", *(f"  {w}" for w in r.warnings)]
    if r.probes:
        lines += ["", "probe (one short streamed request per provider)", *_probe_lines(r.probes)]
    if r.listed:
        lines += ["", "listed by the providers (GET /models)", *_listed_lines(r.listed)]
    return "\n".join(lines) + "\n"


def _config_lines(r: Report) -> list[str]:
    lines = [f"config file  {r.path}  ({_file_state(r.path, r.found, r.issues)})"]
    if r.project is not None:
        found = r.setup.project_file is not None or any(i.path == r.project for i in r.issues)
        lines.append(f"project file {r.project}  ({_file_state(r.project, found, r.issues)})")
    lines += [f"  error: {i.render(r.path)}" for i in r.issues]
    lines += [f"  error: {problem}" for problem in r.fatal]
    return lines


def _file_state(path: Path, found: bool, issues: list[ConfigIssue]) -> str:
    if not found:
        return "none; `tether config init` writes an example" if path.suffix else "none"
    mine = [i for i in issues if (i.path or path) == path]
    if not mine:
        return "ok"
    n = len(mine)
    return f"{n} error{'s' if n > 1 else ''}: each is ignored alone, the rest applies"


def _agent_lines(setup: Setup) -> list[str]:
    """`[agent]` as the turns use it: each key, the file's value or the default."""
    values = msgspec.to_builtins(setup.agent)
    unset = {
        "system_prompt": "(tether's persona)",
        "tool_directives": "(tether's tool rules)",
        "compact_system_prompt": "(tether's summary prompt)",
    }
    shown = [
        [key, unset.get(key, "-") if v is None else json.dumps(v, ensure_ascii=False)]
        for key, v in values.items()
    ]
    return ["agent ([agent]: how turns run; unset keys show their defaults)", *_table(shown)]


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


def _skill_lines(r: Report) -> list[str]:
    """The skills a session here would find; the copies shadowed and the broken ones."""
    found = r.skills
    if not r.setup.skills.enabled:
        return ["skills (Agent Skills)", "  off ([skills] enabled = false)"]
    lines = ["skills (Agent Skills, first root wins a name)"]
    if r.setup.skills.allow_write:
        lines.append("  changes to skills run without asking ([skills] allow_write = true)")
    rows = [[s.name, s.root.source, str(s.directory)] for s in found.skills]
    lines += _table(rows) if rows else ["  none"]
    lines += [f"  shadowed: {lost.directory} (by {won.directory})" for lost, won in found.shadowed]
    lines += [f"  problem: {p.path}: {p.message}" for p in found.problems]
    lines += [
        f"  root: {root.path} ({root.source}{'' if root.path.is_dir() else ', absent'})"
        for root in r.skill_roots
    ]
    return lines


def _mcp_lines(r: Report) -> list[str]:
    """Each configured MCP server, started here: its tools, or why it did not start."""
    lines = ["MCP servers ([mcp_servers], each started and stopped again)"]
    if not r.mcp:
        return [*lines, "  none"]
    for s in r.mcp:
        if s.state == "ready":
            lines.append(f"  {s.name} ({s.transport}): ready, {len(s.tools)} tools")
            lines.append(f"    tools: {', '.join(s.tools) or 'none'}")
        else:
            lines.append(f"  {s.name} ({s.transport}): {s.summary}")
            if s.output:
                lines.append(f"    stderr: {s.output.strip().splitlines()[-1]}")
        lines += [f"    left out: {name}: {why}" for name, why in s.left_out]
    return lines


def _search_engine() -> str:
    from tether.engine.local.local_search import LocalSearch

    return LocalSearch().engine


def _startup() -> tuple[str, int | None]:
    from tether.warm.control import describe

    return describe()


def _search_lines() -> list[str]:
    return [
        "search (regex_files, glob_paths; tree walks in Python)",
        f"  engine: {_search_engine()}",
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
            "errors": [
                {**i._asdict(), "path": str(i.path or r.path), "text": i.render(r.path)}
                for i in r.issues
            ],
            "project": str(r.project) if r.project is not None else None,
            "fatal": r.fatal,
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
        "search": {"engine": _search_engine()},
        "startup": dict(zip(("how", "warm_server_pid"), _startup(), strict=True)),
        "store": {"path": str(r.store.path), "state": r.store.state, "detail": r.store.detail},
        "agent": msgspec.to_builtins(r.setup.agent),
        "warnings": r.warnings,
        "probes": [asdict(p) for p in r.probes],
        "listed": r.listed,
        "skills": _skills_json(r),
        "mcp_servers": [msgspec.to_builtins(s) for s in r.mcp],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _skills_json(r: Report) -> dict[str, Any]:
    return {
        "roots": [{"path": str(x.path), "source": x.source} for x in r.skill_roots],
        "skills": [
            {"name": s.name, "description": s.description, "directory": str(s.directory)}
            for s in r.skills.skills
        ],
        "shadowed": [
            {"directory": str(lost.directory), "by": str(won.directory)}
            for lost, won in r.skills.shadowed
        ],
        "problems": [{"path": str(p.path), "message": p.message} for p in r.skills.problems],
    }


def web_rows(r: WebReport) -> list[list[str]]:
    """Rows of (role, provider, status, detail), in the order they are asked."""
    rows = _role_rows("search", r.search, r.search_hint)
    return rows + _role_rows("fetch", r.fetch, '[web] fetch_provider = "none"')


def _role_rows(role: str, found: list[WebProviderStatus] | None, empty: str) -> list[list[str]]:
    if found is None:
        return [[role, "-", "off", f"[web] {role} = false"]]
    if not found:
        return [[role, "-", "none", empty]]
    numbered = len(found) > 1
    return [
        [
            role,
            f"{i}. {s.name}" if numbered else s.name,
            "ok" if s.usable else "unavailable",
            s.detail,
        ]
        for i, s in enumerate(found, 1)
    ]


def order_note(r: WebReport) -> str:
    if r.search_order == "config":
        return "search order: [web] search_providers"
    return (
        "search order: the environment's (a SearXNG URL, then a DeepSeek key); "
        "[web] search_providers sets another"
    )


def web_json(r: WebReport) -> dict[str, Any]:
    return asdict(r)
