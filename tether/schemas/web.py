"""The `[web]` table of `config.toml`: which web tools are offered, their budgets, and which
providers serve them. Wire types only; unknown keys are errors, limits are validated when a
value is built (decoded or constructed), provider names when the file is read (against the
registry of web provider kinds).

TOML keys are snake_case like the rest of the file; the seeds' camelCase names map as
`search` -> `search`, `fetch` -> `fetch`, `searchMaxResults` -> `search_max_results`,
`fetchTimeoutMs` -> `fetch_timeout_ms`, `searchTimeoutMs` -> `search_timeout_ms`, and the local
fetch provider's `maxUrlLength`, `maxResponseBytes`, `maxBodyChars`, `timeoutMs`,
`maxRedirects`, `userAgent` -> `[web.local]` `max_url_length`, `max_response_bytes`,
`max_body_chars`, `timeout_ms`, `max_redirects`, `user_agent`.

    [web]
    search_providers = ["searxng", "deepseek"]   # fallback order; "bing" only when listed
    fetch_provider = "local"                     # local | deepseek | none
    search_max_results = 8

    [web.searxng]
    url = "http://localhost:8888"

    [web.local]
    max_body_chars = 100000
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

if TYPE_CHECKING:
    from ipaddress import IPv4Network, IPv6Network

    IPNetwork = IPv4Network | IPv6Network

Milliseconds = Annotated[int, msgspec.Meta(gt=0, le=2**31 - 1)]

DEFAULT_BING_URL = "https://www.bing.com/search"


class LocalFetchConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The local fetch provider's limits (seed defaults)."""

    max_url_length: int = 2048
    max_response_bytes: int = 5_000_000
    max_body_chars: int = 100_000
    timeout_ms: float = 30_000  # a backstop above the tool budget (fetch_timeout_ms)
    max_redirects: int = 5  # same-origin hops; 0 follows none
    user_agent: str | None = None  # None: tether's own product User-Agent
    # Addresses in these networks count as public for the SSRF check: behind a fake-IP proxy
    # (Clash, mihomo: 198.18.0.0/15) every host resolves into a non-public range.
    ssrf_assume_public_cidrs: list[str] = msgspec.field(default_factory=list[str])
    allow_http_downgrade: bool = False  # fetch_local follows an HTTPS -> HTTP redirect

    def __post_init__(self) -> None:
        for name in ("max_url_length", "max_response_bytes", "max_body_chars", "timeout_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, not {value!r}")
        if self.timeout_ms > 2**31 - 1:
            raise ValueError(f"timeout_ms must be at most {2**31 - 1}")
        r = self.max_redirects
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise ValueError(f"max_redirects must be a non-negative integer, not {r!r}")
        if self.user_agent is not None and not self.user_agent.strip():
            raise ValueError("user_agent must not be empty")
        if self.ssrf_assume_public_cidrs:
            public_networks(self.ssrf_assume_public_cidrs)  # ValueError naming the bad one


def public_networks(cidrs: list[str]) -> tuple[IPNetwork, ...]:
    """`ssrf_assume_public_cidrs` parsed; ValueError (naming the field first) for a bad one."""
    import ipaddress  # only when the key is set

    networks: list[IPNetwork] = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"ssrf_assume_public_cidrs has {cidr!r}, which is not a network "
                "(expected CIDR notation, e.g. 198.18.0.0/15)"
            ) from None
    return tuple(networks)


class DeepSeekWebConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """DeepSeek's Search and Fetch APIs. The key: `api_key`, else the variable `api_key_env`
    names (default DEEPSEEK_API_KEY). The base URL: `base_url`, else DEEPSEEK_BASE_URL, else
    https://api.deepseek.com (a chat base URL's `/anthropic` or `/v1` suffix is dropped)."""

    api_key: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None


class SearxngConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A SearXNG instance with the JSON format enabled; TETHER_SEARXNG_URL when `url` is unset."""

    url: str | None = None
    headers: dict[str, str] = {}


class BingConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: str = DEFAULT_BING_URL


class ExaConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Exa's search API (`POST /search`, seed `dsh-web-search-exa`). The key: `api_key`, else
    the variable `api_key_env` names (default EXA_API_KEY); `base_url` default
    https://api.exa.ai."""

    api_key: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    search_type: Literal["auto", "keyword", "neural"] = "auto"  # Exa's `type`
    highlights_per_result: Annotated[int, msgspec.Meta(ge=1)] = 1  # Exa's `highlightsPerUrl`


class PerplexityConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Perplexity's Sonar (`POST /chat/completions`, seed `dsh-web-search-perplexity`): an
    answer with its sources. The key: `api_key`, else the variable `api_key_env` names (default
    PERPLEXITY_API_KEY); `base_url` default https://api.perplexity.ai."""

    api_key: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    model: str = "sonar"
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 1024  # the answer's bound
    search_recency: Literal["day", "week", "month", "year"] | None = None  # no filter


class WebConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    search: bool = True  # offer web_search
    fetch: bool = True  # offer web_fetch
    fetch_local: bool = True  # offer fetch_local (raw HTTP from this host)
    search_max_results: Annotated[int, msgspec.Meta(ge=1, le=50)] = 8
    fetch_timeout_ms: Milliseconds = 30_000  # web_fetch's (and fetch_local's) tool budget
    search_timeout_ms: Milliseconds = 30_000  # web_search's tool budget
    # Names in the web provider registry (searxng, deepseek, exa, perplexity, bing; checked
    # when the file is read), in fallback order. None: taken from the environment
    # (TETHER_SEARXNG_URL -> "searxng", then a DeepSeek, Exa or Perplexity key); [] offers no
    # search provider.
    search_providers: list[str] | None = None
    fetch_provider: str = "local"  # local | deepseek | none
    local: LocalFetchConfig = msgspec.field(default_factory=LocalFetchConfig)
    deepseek: DeepSeekWebConfig = msgspec.field(default_factory=DeepSeekWebConfig)
    searxng: SearxngConfig = msgspec.field(default_factory=SearxngConfig)
    bing: BingConfig = msgspec.field(default_factory=BingConfig)
    exa: ExaConfig = msgspec.field(default_factory=ExaConfig)
    perplexity: PerplexityConfig = msgspec.field(default_factory=PerplexityConfig)

    def __post_init__(self) -> None:
        names = self.search_providers or []
        if len(set(names)) != len(names):
            raise ValueError("search_providers lists a provider twice")
        if not 1 <= self.search_max_results <= 50:
            raise ValueError("search_max_results must be between 1 and 50")
        for name in ("fetch_timeout_ms", "search_timeout_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not 0 < value <= 2**31 - 1:
                raise ValueError(f"{name} must be a positive number of milliseconds")
