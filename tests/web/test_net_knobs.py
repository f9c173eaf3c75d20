"""The network knobs of the local fetcher and `fetch_local` (issue 32, item 6): networks that
count as public (`[web.local] ssrf_assume_public_cidrs`, for fake-IP proxies), HTTPS -> HTTP
redirects only with `allow_http_downgrade`, the `user_agent` argument, and GET allowed in
read-only mode. Against loopback servers (one speaking TLS); judged by what the servers received
and who was asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.inprocess import agent_in_memory
from tests.support.web_servers import Page, PageServer, Seen
from tests.support.web_tls import TlsPageServer
from tests.web.conftest import RecordingNetwork, StubResolver
from tests.web.test_web_tools import Harness
from tether.engine.config.file import parse_config
from tether.engine.config.resolve import resolve
from tether.engine.events import Event
from tether.engine.history import ToolCall, ToolResultMessage
from tether.engine.pipeline import Batch
from tether.engine.seam import Web
from tether.engine.web.build import build_web
from tether.engine.web.capability import WebCapability
from tether.engine.web.local_fetch import USER_AGENT
from tether.engine.web.types import HttpRequest, HttpResponse
from tether.errors import ConfigError, WebError
from tether.schemas.web import LocalFetchConfig, WebConfig
from tether.tools import catalog

pytestmark = pytest.mark.anyio

FAKE_IP = "198.18.0.0/15"  # Clash's fake-IP range (RFC 2544 benchmarking)


class ModeHarness(Harness):
    """The web tools through the real pipeline, in a session mode of the test's choosing."""

    def __init__(self, tmp: Path, web: Web, mode: str, config: WebConfig | None = None) -> None:
        super().__init__(tmp, web, config)
        self.mode = mode

    async def run(self, *calls: tuple[str, dict[str, Any]]) -> list[ToolResultMessage]:
        batch = [ToolCall(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls)]

        async def emit(event: Event) -> None:
            self.events.append(event)

        return await Batch(
            batch,
            registry=self.registry,
            ctx=self.ctx,
            grants=self.grants,
            mode=self.mode,
            emit=emit,
        ).run()


def local(**limits: Any) -> WebConfig:
    return WebConfig(local=LocalFetchConfig(**limits))


# --- ssrf_assume_public_cidrs ---------------------------------------------------------------


async def test_a_fake_ip_answer_is_refused_unless_its_network_is_assumed_public(
    tmp_path: Path, network: RecordingNetwork
) -> None:
    """Behind Clash every name resolves into 198.18.0.0/15: refused as not public, until the
    range is listed; then the page is fetched unasked, from the address that was checked."""
    resolver = StubResolver({"docs.example": [["198.18.0.7"]]})
    plain = Harness(tmp_path, build_web(WebConfig(), {}, resolver=resolver, network=network))
    refused = await plain.one("web_fetch", url="https://docs.example/page")
    assert refused.startswith(
        "Error: WEB_BLOCKED_URL: docs.example resolves to 198.18.0.7, not a public address"
    )
    assert network.connects == []
    config = local(ssrf_assume_public_cidrs=[FAKE_IP])
    proxied = Harness(tmp_path, build_web(config, {}, resolver=resolver, network=network))
    text = await proxied.one("web_fetch", url="https://docs.example/page")
    assert proxied.user.asked == []
    assert text.startswith("Error: WEB_PROVIDER_ERROR")  # the test network reaches no one
    assert network.connects == [("198.18.0.7", 443)]


async def test_a_listed_network_is_fetched_without_asking(tmp_path: Path, site: PageServer) -> None:
    site.route("/doc", Page(b"from the proxy"))
    h = Harness(tmp_path, build_web(local(ssrf_assume_public_cidrs=["127.0.0.0/8"]), {}))
    text = await h.one("web_fetch", url=site.url("/doc"))
    assert text == f"Fetched {site.url('/doc')} (HTTP 200)\n\nfrom the proxy"
    assert h.user.asked == [] and len(site.requests) == 1
    other = Harness(tmp_path, build_web(local(ssrf_assume_public_cidrs=["10.0.0.0/8"]), {}))
    await other.one("web_fetch", url=site.url("/doc"))
    assert len(other.user.asked) == 1  # loopback is not in 10/8: asked as before


@pytest.mark.parametrize(
    ("answer", "listed"),
    [
        ("::ffff:198.18.3.4", FAKE_IP),  # an IPv4-mapped answer judged as its IPv4 address
        ("fdfe:dcba:9876::1", "fdfe:dcba:9876::/48"),  # a fake-IP range in IPv6
    ],
)
async def test_listed_networks_cover_ipv6_answers(
    network: RecordingNetwork, answer: str, listed: str
) -> None:
    resolver = StubResolver({"x.example": [[answer]]})
    w = build_web(local(ssrf_assume_public_cidrs=[listed]), {}, resolver=resolver)
    target = await w.http_target("https://x.example/")
    assert (target.reach, target.addresses) == ("public", (answer,))


async def test_cloud_metadata_stays_refused_whatever_is_listed(
    site: PageServer, network: RecordingNetwork
) -> None:
    resolver = StubResolver(
        {"meta.example": [["169.254.169.254"]], "mapped.example": [["::ffff:169.254.169.254"]]}
    )
    config = local(ssrf_assume_public_cidrs=["169.254.0.0/16", "0.0.0.0/0", "::/0"])
    w = build_web(config, {}, resolver=resolver, network=network)
    for url in (
        "http://meta.example/latest",
        "http://169.254.169.254/latest",
        "http://mapped.example/latest",
        "http://[::ffff:a9fe:a9fe]/latest",
    ):
        with pytest.raises(WebError) as info:
            await w.http_target(url)
        assert info.value.code == "WEB_BLOCKED_URL" and "cloud metadata" in info.value.message
    assert network.connects == []


def test_a_bad_network_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match=r"^ssrf_assume_public_cidrs has 'clash'"):
        LocalFetchConfig(ssrf_assume_public_cidrs=["198.18.0.0/15", "clash"])


# --- allow_http_downgrade -------------------------------------------------------------------


async def _get(w: WebCapability, url: str) -> HttpResponse:
    """As fetch_local does it: the plan checks the destination, the run connects there."""
    return await w.http(HttpRequest("GET", url), target=await w.http_target(url))


@pytest.mark.slow
async def test_an_https_to_http_redirect_needs_allow_http_downgrade(tmp_path: Path) -> None:
    """Both servers are loopback, listed as public so the redirect's new port needs no consent
    and the downgrade is the only thing judged."""
    with TlsPageServer(tmp_path) as secure, PageServer() as plain:
        plain.route("/landing", Page(b"over cleartext"))
        secure.route("/start", Page(status=302, headers={"Location": plain.url("/landing")}))
        limits: dict[str, Any] = {"ssrf_assume_public_cidrs": ["127.0.0.0/8"]}
        strict = build_web(local(**limits), {}, tls=secure.client_context())
        with pytest.raises(WebError) as info:
            await _get(strict, secure.url("/start"))
        assert info.value.code == "WEB_REDIRECT_BLOCKED"
        assert info.value.message == (
            f"{secure.url('/start')} redirects from HTTPS to HTTP: {plain.url('/landing')} "
            "(`[web.local] allow_http_downgrade` is off)"
        )
        assert plain.requests == [] and len(secure.requests) == 1
        opted = build_web(
            local(**limits, allow_http_downgrade=True), {}, tls=secure.client_context()
        )
        resp = await _get(opted, secure.url("/start"))
    assert (resp.status, resp.url, resp.body) == (200, plain.url("/landing"), "over cleartext")
    assert resp.redirects == [secure.url("/start")]
    assert [r.path for r in plain.requests] == ["/landing"]


@pytest.mark.slow
async def test_https_is_verified_against_the_trusted_certificates(tmp_path: Path) -> None:
    """The test CA is trusted only where it is passed: the default bundle refuses the server."""
    with TlsPageServer(tmp_path) as secure:
        secure.route("/p", Page(b"secret"))
        trusted = build_web(WebConfig(), {}, tls=secure.client_context())
        assert (await _get(trusted, secure.url("/p"))).body == "secret"
        with pytest.raises(WebError) as info:
            await _get(build_web(WebConfig(), {}), secure.url("/p"))
    assert info.value.code == "WEB_PROVIDER_ERROR" and "CERTIFICATE_VERIFY_FAILED" in str(
        info.value.message
    )


# --- user_agent -------------------------------------------------------------------------------


def _echo_agent(seen: Seen) -> Page:
    return Page(seen.headers.get("user-agent", "").encode())


async def test_the_user_agent_argument_is_sent_and_wins(tmp_path: Path, site: PageServer) -> None:
    site.route("/ua", _echo_agent)
    h = Harness(tmp_path, build_web(WebConfig(), {}))
    url = site.url("/ua")
    await h.one("fetch_local", url=url, user_agent="AgentUA/9")
    await h.one("fetch_local", url=url, headers={"User-Agent": "HeaderUA/1"})
    await h.one("fetch_local", url=url, headers={"user-agent": "HeaderUA/1"}, user_agent="ArgUA/2")
    await h.one("fetch_local", url=url)
    sent = [r.headers["user-agent"] for r in site.requests]
    assert sent == ["AgentUA/9", "HeaderUA/1", "ArgUA/2", USER_AGENT]
    tool = h.registry.get("fetch_local")
    assert tool is not None
    assert "User-Agent" in tool.parameters["properties"]["user_agent"]["description"]


# --- read-only mode and /btw --------------------------------------------------------------


async def test_read_only_mode_allows_fetch_local_get_and_refuses_the_rest(
    tmp_path: Path, site: PageServer
) -> None:
    site.route("/api", lambda seen: Page(f"{seen.method} ok".encode()))
    h = ModeHarness(tmp_path, build_web(WebConfig(), {}), "read-only")
    got = await h.one("fetch_local", url=site.url("/api"))
    assert got.startswith("[approval] user (once)\nHTTP 200 OK\n") and "GET ok" in got
    for method in ("POST", "PUT", "DELETE"):
        [refused] = await h.run(("fetch_local", {"url": site.url("/api"), "method": method}))
        assert refused.is_error
        assert refused.content == (
            "error [READ_ONLY_MODE]: fetch_local method must be GET in a read-only context "
            "(POST/PUT/DELETE mutate)"
        )
    assert [r.method for r in site.requests] == ["GET"]
    assert len(h.user.asked) == 1  # the loopback GET; the refused calls asked nobody


@pytest.mark.slow
async def test_btw_may_read_with_fetch_local_over_acp(
    home: Path, project: Path, site: PageServer
) -> None:
    """A side question (`/btw`, read-only) GETs a local service after the user allows the
    loopback host; its POST is refused without a question and never reaches the service."""
    site.route("/health", lambda seen: Page(f"{seen.method}: healthy".encode()))
    url = site.url("/health")
    side_calls = [
        _call("g1", "fetch_local", url=url),
        _call("p1", "fetch_local", url=url, method="POST", body="restart"),
    ]
    rounds = [{"events": side_calls}, {"events": [{"text": "The service is healthy."}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "/btw is the local service up?")
    assert [(r.method, r.body) for r in site.requests] == [("GET", b"")]
    [asked] = client.permissions
    assert (
        asked["toolCall"]["title"] == f"GET {url} (loopback host {site.host_port}, cleartext HTTP)"
    )
    [model] = client.models
    results = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True]
    assert "GET: healthy" in results[0].content
    assert results[1].content == (
        "error [READ_ONLY_MODE]: fetch_local method must be GET in a read-only context "
        "(POST/PUT/DELETE mutate)"
    )
    failed = [
        u
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "failed"
    ]
    assert [u["toolCallId"] for u in failed] == ["p1"]


def _call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


# --- the config file ----------------------------------------------------------------------


def test_the_keys_are_read_from_the_config_file() -> None:
    text = (
        "[web.local]\n"
        'ssrf_assume_public_cidrs = ["198.18.0.0/15", "fdfe:dcba:9876::/48"]\n'
        "allow_http_downgrade = true\n"
    )
    limits = resolve(parse_config(text), env={}).web.local
    assert limits.ssrf_assume_public_cidrs == ["198.18.0.0/15", "fdfe:dcba:9876::/48"]
    assert limits.allow_http_downgrade is True
    assert LocalFetchConfig().ssrf_assume_public_cidrs == []
    assert LocalFetchConfig().allow_http_downgrade is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[web.local]\n\nssrf_assume_public_cidrs = ["198.18.0.0/15", "clash"]\n',
            ":3: web.local.ssrf_assume_public_cidrs: has 'clash', which is not a network "
            "(expected CIDR notation, e.g. 198.18.0.0/15)",
        ),
        (
            '[web.local]\nssrf_assume_public_cidrs = "198.18.0.0/15"\n',
            ":2: web.local.ssrf_assume_public_cidrs: expected an array",
        ),
        (
            "[web.local]\nallow_http_downgrade = 'yes'\n",
            ":2: web.local.allow_http_downgrade: expected true or false, got a string",
        ),
    ],
)
def test_bad_values_name_key_and_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, Path("/cfg/config.toml"))
    lines = str(caught.value).splitlines()
    assert any(line.startswith("/cfg/config.toml" + expected) for line in lines), lines
