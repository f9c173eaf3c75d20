"""The web part of `tether doctor`'s report: which web tools are offered, which search
providers are asked in which order, the fetch provider, and whether each can work (nothing is
sent to find out)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tether.engine.web.build import SEARCH_HINT, WebPlan, plan_web
from tether.engine.web.web_kinds import WebRole
from tether.schemas.web import WebConfig

# The tool each `[web]` switch offers.
_TOOLS = (("search", "web_search"), ("fetch", "web_fetch"), ("fetch_local", "fetch_local"))


@dataclass
class WebProviderStatus:
    name: str
    usable: bool
    detail: str  # where it sends requests, or why it cannot work


@dataclass
class WebReport:
    tools: list[str]
    # In the order they are asked; None when the tool is off.
    search: list[WebProviderStatus] | None = None
    fetch: list[WebProviderStatus] | None = None
    search_order: str = "environment"  # or "config": [web] search_providers
    search_hint: str = ""  # why there is no search provider, and how to get one

    def warnings(self) -> list[str]:
        """Providers the configuration names that cannot work."""
        named = [("search", s) for s in self.search or [] if self.search_order == "config"]
        named += [("fetch", f) for f in self.fetch or []]
        return [f"web {role} provider {s.name}: {s.detail}" for role, s in named if not s.usable]


def web_report(config: WebConfig, env: Mapping[str, str]) -> WebReport:
    plan = plan_web(config, env)
    tools = [tool for switch, tool in _TOOLS if getattr(config, switch)]
    report = WebReport(tools, search_order="config" if plan.search_configured else "environment")
    if config.search:
        report.search = [_status(plan, "search", name) for name in plan.search]
    if config.fetch:
        report.fetch = [_status(plan, "fetch", name) for name in plan.fetch]
    if report.search == []:
        configured = config.search_providers is not None
        report.search_hint = "[web] search_providers = []" if configured else SEARCH_HINT
    return report


def _status(plan: WebPlan, role: WebRole, name: str) -> WebProviderStatus:
    why = plan.why_not(role, name)
    if why is not None:
        return WebProviderStatus(name, False, why)
    return WebProviderStatus(name, True, _endpoint(plan.made[(role, name)]))


def _endpoint(provider: object) -> str:
    for attr in ("url", "base_url"):  # remote providers' endpoints
        value = getattr(provider, attr, None)
        if isinstance(value, str):
            return value
    return "from this host"
