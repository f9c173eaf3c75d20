"""The local fetch provider: anonymous HTTP(S) from this host, with every transport rule of a safe
fetch. Only http/https, no credentials in URLs, a URL length cap, a byte cap, a character cap,
a timeout backstop, same-origin redirects with a hop cap, an explicit product User-Agent, binary
types refused, and SSRF checks: each destination is resolved and judged before anything is sent
(`ssrf`), and connections go to the judged addresses only (`pinned`).

A loopback or private-network destination is fetched only with a `Target` the caller passes in:
the caller's proof that the user approved exactly that host and port (the tools get it from the
permission request their plan raised). Without one, such a destination is refused.

The same machinery serves raw requests (`request`, for `fetch_local`): any of GET, POST, PUT and
DELETE, caller headers and body, every status and header reported, binary bodies summarised.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import anyio

from tether import __version__
from tether.engine.web.charset import decode
from tether.engine.web.ssrf import ParsedUrl, Resolver, check_target, parse_url, system_resolver
from tether.engine.web.types import FetchResult, HttpRequest, HttpResponse, Target
from tether.errors import WebError
from tether.schemas.web import LocalFetchConfig, public_networks

if TYPE_CHECKING:
    import ssl

    import httpx
    from httpcore import AsyncNetworkBackend

    from tether.engine.web.pinned import PinnedBackend

USER_AGENT = f"tether/{__version__} (coding agent; web fetch)"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REQUEST_BODY = 1_000_000
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/xhtml+xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-ndjson",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
        "application/graphql",
    }
)
_MARKUP = frozenset({"text/html", "application/xhtml+xml", "text/xml", "application/xml"})


def media_type(content_type: str | None) -> tuple[str, str | None]:
    """`text/html; charset=x` -> ("text/html", "x")."""
    if not content_type:
        return "", None
    kind, *params = content_type.split(";")
    charset = None
    for p in params:
        name, _, value = p.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return kind.strip().lower(), charset


def is_textual(kind: str) -> bool:
    return (
        kind.startswith("text/")
        or kind in _TEXT_TYPES
        or (kind.startswith("application/") and kind.endswith(("+json", "+xml")))
    )


class LocalFetcher:
    name = "local"

    def __init__(
        self,
        limits: LocalFetchConfig | None = None,
        *,
        resolver: Resolver = system_resolver,
        network: AsyncNetworkBackend | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.limits = limits or LocalFetchConfig()
        self.timeout = self.limits.timeout_ms / 1000
        self.user_agent = self.limits.user_agent or USER_AGENT
        self.public = public_networks(self.limits.ssrf_assume_public_cidrs)
        self._resolver = resolver
        self._network = network  # the socket boundary: tests wrap it to see every connect
        self._tls = tls  # the certificates trusted; None: the usual CA bundle

    async def check(self, url: str) -> Target:
        """Validate, resolve and judge `url`'s destination; raises WebError."""
        return await check_target(self._parse(url), self._resolver, self.public)

    def _parse(self, url: str) -> ParsedUrl:
        return parse_url(url, max_length=self.limits.max_url_length)

    async def _approved(self, parsed: ParsedUrl, target: Target | None) -> Target:
        if target is not None and (target.host, target.port) == (parsed.host, parsed.port):
            return target
        checked = await check_target(parsed, self._resolver, self.public)
        if checked.needs_consent:
            raise WebError(
                "WEB_BLOCKED_URL",
                f"{checked.host_port} is a {checked.reach} address: it is fetched only after "
                "the user allows that host and port",
            )
        return checked

    def _backend(self) -> PinnedBackend:
        from tether.engine.web.pinned import PinnedBackend

        return PinnedBackend(self._network)

    def _client(self, backend: PinnedBackend) -> httpx.AsyncClient:
        from tether.engine.web.pinned import pinned_client

        return pinned_client(
            backend, timeout=self.timeout, user_agent=self.user_agent, tls=self._tls
        )

    # --- web_fetch -------------------------------------------------------------------------

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult:
        parsed = self._parse(url)
        pinned = await self._approved(parsed, target)
        backend = self._backend()
        backend.allow(pinned)
        with anyio.move_on_after(self.timeout) as scope:
            async with self._client(backend) as client:
                return await self._fetch_hops(client, parsed)
        assert scope.cancelled_caught
        raise WebError(
            "WEB_FETCH_TIMEOUT",
            f"fetching {url} took over {self.timeout:g} s (`[web.local] timeout_ms`)",
        )

    async def _fetch_hops(self, client: httpx.AsyncClient, first: ParsedUrl) -> FetchResult:
        current = first
        for hop in range(self.limits.max_redirects + 1):
            async with _send(client, "GET", current.url) as resp:
                location = resp.headers.get("location")
                if resp.status_code in REDIRECTS and location:
                    nxt = self._redirect(current, location, hop)
                    if nxt.origin != current.origin:
                        raise WebError(
                            "WEB_REDIRECT_BLOCKED",
                            f"{current.url} redirects to another origin, {nxt.url}; "
                            "fetch that URL with a new call if you trust it",
                        )
                    current = nxt
                    continue
                return await self._page(resp, current.url)
        raise AssertionError("unreachable: the last hop either returns or raises")

    def _redirect(self, current: ParsedUrl, location: str, hop: int) -> ParsedUrl:
        # The budget is spent before the next hop is even parsed: maxRedirects N follows N.
        if hop >= self.limits.max_redirects:
            raise WebError(
                "WEB_REDIRECT_BLOCKED",
                f"{current.url} redirected more than the maximum of "
                f"{self.limits.max_redirects} times",
            )
        return self._parse(urljoin(current.url, location))

    async def _page(self, resp: httpx.Response, url: str) -> FetchResult:
        kind, charset = media_type(resp.headers.get("content-type"))
        if not _empty(resp) and not is_textual(kind):
            shown = kind or "no Content-Type"
            raise WebError(
                "WEB_UNSUPPORTED_CONTENT_TYPE",
                f"{url} answered {shown}: only text, HTML, JSON and XML are fetched",
            )
        data = await self._read(resp, url)
        text = decode(data, header_charset=charset, markup=kind in _MARKUP)
        return FetchResult(url, resp.status_code, text, kind or "text/plain", provider=self.name)

    async def _read(self, resp: httpx.Response, url: str) -> bytes:
        cap = self.limits.max_response_bytes
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _too_large(url, cap)
        chunks: list[bytes] = []
        size = 0
        with transport_errors():
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > cap:
                    raise _too_large(url, cap)
                chunks.append(chunk)
        return b"".join(chunks)

    # --- fetch_local -----------------------------------------------------------------------

    async def request(self, req: HttpRequest, *, target: Target | None = None) -> HttpResponse:
        parsed = self._parse(req.url)
        if req.body is not None and len(req.body) > MAX_REQUEST_BODY:
            raise WebError(
                "WEB_FETCH_TOO_LARGE", f"request bodies are at most {MAX_REQUEST_BODY} bytes"
            )
        pinned = await self._approved(parsed, target)
        backend = self._backend()
        backend.allow(pinned)
        with anyio.move_on_after(self.timeout) as scope:
            async with self._client(backend) as client:
                return await self._request_hops(client, backend, req, parsed, pinned)
        assert scope.cancelled_caught
        raise WebError(
            "WEB_FETCH_TIMEOUT",
            f"{req.method} {req.url} took over {self.timeout:g} s (`[web.local] timeout_ms`)",
        )

    async def _request_hops(
        self,
        client: httpx.AsyncClient,
        backend: PinnedBackend,
        req: HttpRequest,
        current: ParsedUrl,
        approved: Target,
    ) -> HttpResponse:
        redirects: list[str] = []
        for hop in range(self.limits.max_redirects + 1):
            async with _send(client, req.method, current.url, req.headers, req.body) as resp:
                location = resp.headers.get("location")
                # Only a GET follows redirects: other methods report the 3xx as it is.
                if req.method == "GET" and resp.status_code in REDIRECTS and location:
                    nxt = self._redirect(current, location, hop)
                    await self._allow_hop(backend, current, nxt, approved)
                    redirects.append(current.url)
                    current = nxt
                    continue
                return await self._response(resp, current.url, redirects)
        raise AssertionError("unreachable: the last hop either returns or raises")

    async def _allow_hop(
        self, backend: PinnedBackend, current: ParsedUrl, nxt: ParsedUrl, approved: Target
    ) -> None:
        """Re-check a redirect's destination; the approval covers its own host:port only."""
        downgrade = current.scheme == "https" and nxt.scheme == "http"
        if downgrade and not self.limits.allow_http_downgrade:
            raise WebError(
                "WEB_REDIRECT_BLOCKED",
                f"{current.url} redirects from HTTPS to HTTP: {nxt.url} "
                "(`[web.local] allow_http_downgrade` is off)",
            )
        if (nxt.host, nxt.port) == (approved.host, approved.port):
            return
        try:
            target = await check_target(nxt, self._resolver, self.public)
        except WebError as exc:
            raise WebError("WEB_REDIRECT_BLOCKED", f"redirect to {nxt.url}: {exc}") from None
        if target.needs_consent:
            raise WebError(
                "WEB_REDIRECT_BLOCKED",
                f"{current.url} redirects to {nxt.url}, a {target.reach} address the user has "
                "not allowed; request that URL with a new call to ask",
            )
        backend.allow(target)

    async def _response(self, resp: httpx.Response, url: str, redirects: list[str]) -> HttpResponse:
        kind, charset = media_type(resp.headers.get("content-type"))
        data = await self._read(resp, url)
        textual = is_textual(kind) or (not kind and _looks_textual(data))
        text = decode(data, header_charset=charset, markup=kind in _MARKUP) if textual else ""
        cap = self.limits.max_body_chars
        return HttpResponse(
            url=url,
            status=resp.status_code,
            reason=resp.reason_phrase,
            headers=[(k, v) for k, v in resp.headers.multi_items()],
            body=text[:cap],
            media_type=kind,
            size=len(data),
            binary=not textual and bool(data),
            truncated=len(text) > cap,
            redirects=redirects,
        )


def _empty(resp: httpx.Response) -> bool:
    return resp.status_code in (204, 304) or resp.headers.get("content-length") == "0"


def _looks_textual(data: bytes) -> bool:
    sample = data[:1024]
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start > len(sample) - 4  # a character cut at the sample's end
    return True


def _too_large(url: str, cap: int) -> WebError:
    return WebError(
        "WEB_FETCH_TOO_LARGE",
        f"{url} is larger than {cap} bytes (`[web.local] max_response_bytes`)",
    )


class _send:
    """`client.stream(...)` with transport failures turned into WebError."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> None:
        self._cm = client.stream(method, url, headers=headers, content=body)

    async def __aenter__(self) -> httpx.Response:
        with transport_errors():
            return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)


@contextmanager
def transport_errors() -> Iterator[None]:
    """Turn transport failures into WebError; anything else (a WebError, a bug) passes."""
    import httpx

    from tether.engine.web.pinned import UncheckedDestination

    try:
        yield
    except UncheckedDestination as exc:
        raise WebError("WEB_BLOCKED_URL", f"refused to connect: {exc}") from exc
    except httpx.TimeoutException as exc:
        raise WebError("WEB_FETCH_TIMEOUT", f"the server did not answer in time: {exc}") from exc
    except httpx.HTTPError as exc:
        raise WebError("WEB_PROVIDER_ERROR", f"{type(exc).__name__}: {exc}") from exc
