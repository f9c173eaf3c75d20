"""SSRF protection: the resolver is stubbed at its boundary and the socket boundary records every
connect, so these tests prove which addresses are refused without any connection attempt, and
that a request connects to the very addresses that were checked. Traffic goes to loopback only.
"""

from __future__ import annotations

import ipaddress

import pytest

from tests.support.web_servers import Page, PageServer
from tests.web.conftest import RecordingNetwork, StubResolver
from tether.engine.web.build import build_web
from tether.engine.web.capability import WebCapability
from tether.engine.web.ssrf import classify
from tether.engine.web.types import HttpRequest
from tether.errors import WebError
from tether.schemas.web import WebConfig

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("address", "verdict"),
    [
        ("93.184.216.34", "public"),
        ("2606:4700:4700::1111", "public"),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private network"),
        ("172.16.5.4", "private network"),
        ("192.168.1.1", "private network"),
        ("100.64.0.1", "private network"),  # carrier-grade NAT
        ("fd12:3456::1", "private network"),
        ("64:ff9b::a01:203", "private network"),  # NAT64 of 10.1.2.3
        ("169.254.169.254", "refused"),  # cloud metadata
        ("fd00:ec2::254", "refused"),
        ("100.100.100.200", "refused"),
        ("2002:a9fe:a9fe::", "refused"),  # 6to4 of 169.254.169.254
        ("169.254.10.20", "refused"),  # link-local
        ("fe80::1", "refused"),
        ("224.0.0.251", "refused"),  # multicast
        ("ff02::1", "refused"),
        ("0.0.0.0", "refused"),
        ("::", "refused"),
        ("255.255.255.255", "refused"),
        ("240.0.0.1", "refused"),  # reserved
        ("192.0.2.10", "refused"),  # documentation
    ],
)
def test_classify(address: str, verdict: str) -> None:
    assert classify(ipaddress.ip_address(address))[0] == verdict


def web(resolver: StubResolver, network: RecordingNetwork) -> WebCapability:
    return build_web(WebConfig(), {}, resolver=resolver, network=network)


@pytest.mark.parametrize(
    "answers",
    [["169.254.169.254"], ["fd00:ec2::254"], ["93.184.216.34", "169.254.169.254"], ["0.0.0.0"]],
    ids=["metadata-v4", "metadata-v6", "one-of-several", "unspecified"],
)
async def test_refused_addresses_are_never_connected(
    answers: list[str], network: RecordingNetwork
) -> None:
    resolver = StubResolver({"evil.test": [answers]})
    w = web(resolver, network)
    with pytest.raises(WebError) as planned:
        await w.fetch_target("http://evil.test/latest/meta-data/")
    with pytest.raises(WebError) as fetched:
        await w.fetch("http://evil.test/latest/meta-data/")
    with pytest.raises(WebError) as raw:
        await w.http(HttpRequest("GET", "http://evil.test/"))
    assert {planned.value.code, fetched.value.code, raw.value.code} == {"WEB_BLOCKED_URL"}
    assert network.connects == []


async def test_metadata_host_names_are_refused_before_resolving(network: RecordingNetwork) -> None:
    resolver = StubResolver({})
    for url in ("http://metadata.google.internal/computeMetadata/v1/", "http://metadata/"):
        with pytest.raises(WebError) as info:
            await web(resolver, network).fetch(url)
        assert info.value.code == "WEB_BLOCKED_URL"
    assert resolver.asked == [] and network.connects == []


@pytest.mark.parametrize("answers", [["10.0.0.7"], ["93.184.216.34", "192.168.0.2"], ["::1"]])
async def test_private_addresses_need_an_approved_target(
    answers: list[str], network: RecordingNetwork
) -> None:
    resolver = StubResolver({"nas.test": [answers]})
    w = web(resolver, network)
    target = await w.fetch_target("http://nas.test:8080/")
    assert target is not None and target.needs_consent
    assert target.host_port == "nas.test:8080"
    with pytest.raises(WebError) as info:
        await w.fetch("http://nas.test:8080/")  # nobody approved it
    assert info.value.code == "WEB_BLOCKED_URL" and "nas.test:8080" in info.value.message
    assert network.connects == []


async def test_a_rebinding_answer_after_the_check_is_never_used(
    site: PageServer, network: RecordingNetwork
) -> None:
    """The check saw 127.0.0.1 (approved by the user); the host's next answer would be a LAN
    address. The request connects to the checked address and asks DNS nothing more."""
    site.route("/p", Page(b"the approved server"))
    resolver = StubResolver({"rebind.test": [["127.0.0.1"], ["10.0.0.9"]]})
    w = web(resolver, network)
    url = f"http://rebind.test:{site.port}/p"
    target = await w.fetch_target(url)
    page = await w.fetch(url, target=target)
    assert page.body == "the approved server"
    assert resolver.asked == ["rebind.test"]
    assert network.connects == [("127.0.0.1", site.port)]
    assert site.requests[0].headers["host"] == f"rebind.test:{site.port}"  # Host keeps the name


async def test_a_public_check_pins_the_public_address(network: RecordingNetwork) -> None:
    """Checked public, rebound to loopback afterwards: the connection still goes to the checked
    public address (the test network refuses it, so nothing leaves this machine)."""
    resolver = StubResolver({"flip.test": [["93.184.216.34"], ["127.0.0.1"]]})
    w = web(resolver, network)
    target = await w.fetch_target("http://flip.test/")
    with pytest.raises(WebError):
        await w.fetch("http://flip.test/", target=target)
    assert network.connects == [("93.184.216.34", 80)]
    assert resolver.asked == ["flip.test"]


async def test_every_redirect_hop_of_a_raw_request_is_rechecked(
    site: PageServer, network: RecordingNetwork
) -> None:
    with PageServer() as other:
        resolver = StubResolver({"lan.test": [["10.0.0.7"]], "meta.test": [["169.254.169.254"]]})
        w = web(resolver, network)
        site.route("/to-lan", Page(status=302, headers={"Location": "http://lan.test/x"}))
        site.route("/to-meta", Page(status=302, headers={"Location": "http://meta.test/x"}))
        site.route("/to-other", Page(status=302, headers={"Location": other.url("/x")}))
        approved = await w.http_target(site.url("/"))
        for path in ("/to-lan", "/to-meta", "/to-other"):
            with pytest.raises(WebError) as info:
                await w.http(HttpRequest("GET", site.url(path)), target=approved)
            assert info.value.code == "WEB_REDIRECT_BLOCKED", path
        assert other.connections == 0  # another loopback port: not what the user allowed
    assert {host for host, _ in network.connects} == {"127.0.0.1"}
    assert all(port == site.port for _, port in network.connects)


async def test_a_raw_get_follows_a_redirect_to_the_approved_host(site: PageServer) -> None:
    site.route("/a", Page(status=307, headers={"Location": "/b"}))
    site.route("/b", Page(b"here"))
    w = build_web(WebConfig(), {})
    resp = await w.http(
        HttpRequest("GET", site.url("/a")), target=await w.http_target(site.url("/a"))
    )
    assert (resp.status, resp.body, resp.redirects) == (200, "here", [site.url("/a")])
