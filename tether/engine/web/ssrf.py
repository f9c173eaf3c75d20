"""Where a URL may be fetched from this host: parse and validate it, resolve its host, and classify
every address (public; loopback or private network, which need the user's consent; everything
else, refused outright). The resolver is a parameter: it is the boundary tests stub.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal
from urllib.parse import urlsplit

import anyio
import msgspec

from tether.engine.web.types import Reach, Target
from tether.errors import WebError

Resolver = Callable[[str, int], Awaitable[list[str]]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Verdict = Literal["public", "loopback", "private network", "refused"]

RESOLVE_TIMEOUT = 10.0

# Instance-metadata services hand out cloud credentials: never fetched, not even with consent.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.169.253",  # AWS VPC DNS
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer
    )
)
_METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data"}
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# A host of digits, dots and hex only (`0177.0.0.1`, `0x7f.1`, `2130706433`): an IPv4 address
# unless it is one in the canonical form, which `ipaddress` accepts.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class ParsedUrl(msgspec.Struct, frozen=True):
    url: str
    scheme: str
    host: str  # ASCII, lower case, IPv6 without brackets
    port: int

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def parse_url(url: str, *, max_length: int) -> ParsedUrl:
    """Validate an absolute http(s) URL without credentials; raises WebError."""
    if len(url) > max_length:
        raise WebError(
            "WEB_INVALID_URL", f"the URL is {len(url)} characters long (at most {max_length})"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebError("WEB_INVALID_URL", f"malformed URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise WebError("WEB_INVALID_URL", f"only http and https URLs can be fetched, not {url!r}")
    if parts.username is not None or parts.password is not None:
        raise WebError("WEB_BLOCKED_URL", "URLs with a user name or password are not fetched")
    if not parts.hostname:
        raise WebError("WEB_INVALID_URL", f"the URL {url!r} has no host")
    host = _ascii_host(parts.hostname)
    if _NUMERIC_HOST.match(host) and _ip(host) is None:
        raise WebError(
            "WEB_INVALID_URL",
            f"{host} is an address written in a form (octal, hex, or short) that resolvers and "
            "browsers read differently; write it as four decimal numbers, e.g. 127.0.0.1",
        )
    return ParsedUrl(url, scheme, host, port or _default_port(scheme))


def _ascii_host(host: str) -> str:
    host = host.rstrip(".").lower()
    if _ip(host) is not None or host.isascii():
        return host
    import idna  # httpx's own dependency; IDNA 2008, as httpx encodes the request

    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise WebError("WEB_INVALID_URL", f"invalid host name {host!r}: {exc}") from None


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def classify(address: IPAddress) -> tuple[Verdict, str]:
    """The address's verdict and, for anything but public, why."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_v4(address)
        if embedded is not None:
            return classify(embedded)
    if address in _METADATA_ADDRESSES:
        return "refused", "a cloud metadata address"
    if address.is_loopback:
        return "loopback", "a loopback address"
    checks: list[tuple[bool, str]] = [
        (address.is_unspecified, "the unspecified address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved, "a reserved address"),
    ]
    for hit, why in checks:
        if hit:
            return "refused", why
    if _is_lan(address):
        return "private network", "a private-network address"
    if not address.is_global:
        return "refused", "not a public address"
    return "public", ""


def judge(address: IPAddress, public: Sequence[IPNetwork] = ()) -> tuple[Verdict, str]:
    """`classify`, except that an address in one of the `public` networks is public: a fake-IP
    proxy's answers (Clash: 198.18.0.0/15) stand for hosts on the internet. A cloud metadata
    address stays refused whatever the list says, in any IPv6 form too."""
    if not _metadata(address) and any(_within(address, n) for n in public):
        return "public", ""
    return classify(address)


def _metadata(address: IPAddress) -> bool:
    if address in _METADATA_ADDRESSES:
        return True
    embedded = _embedded_v4(address) if isinstance(address, ipaddress.IPv6Address) else None
    return embedded is not None and embedded in _METADATA_ADDRESSES


def _within(address: IPAddress, network: IPNetwork) -> bool:
    if address.version == network.version:
        return address in network
    embedded = _embedded_v4(address) if isinstance(address, ipaddress.IPv6Address) else None
    return embedded is not None and embedded in network


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, NAT64, 6to4): judged as that address."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def _is_lan(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        private = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
        return address in _CGNAT or any(address in ipaddress.ip_network(n) for n in private)
    return address in ipaddress.ip_network("fc00::/7")


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in seen:
            seen.append(address)
    return seen


async def check_target(
    parsed: ParsedUrl, resolver: Resolver, public: Sequence[IPNetwork] = ()
) -> Target:
    """Resolve the URL's host and judge every address; raises WebError(WEB_BLOCKED_URL) when any
    address is refused. A host with a loopback or private address is a non-public target.
    `public`: networks whose addresses count as public (`ssrf_assume_public_cidrs`)."""
    if parsed.host in _METADATA_HOSTS or parsed.host.endswith(".metadata.google.internal"):
        raise WebError("WEB_BLOCKED_URL", f"{parsed.host} is a cloud metadata service")
    literal = _ip(parsed.host)
    texts = [parsed.host] if literal is not None else await _resolve(parsed, resolver)
    reaches: list[Reach] = []
    for text in texts:
        address = _ip(text.split("%", 1)[0])
        if address is None:
            raise WebError("WEB_BLOCKED_URL", f"{parsed.host} resolved to a non-IP {text!r}")
        verdict, why = judge(address, public)
        if verdict == "refused":
            raise WebError(
                "WEB_BLOCKED_URL", f"{parsed.host} resolves to {address}, {why}: never fetched"
            )
        reaches.append(verdict)
    reach: Reach = "public"
    if "private network" in reaches:
        reach = "private network"
    elif "loopback" in reaches:
        reach = "loopback"
    return Target(parsed.host, parsed.port, tuple(texts), reach)


async def _resolve(parsed: ParsedUrl, resolver: Resolver) -> list[str]:
    try:
        with anyio.fail_after(RESOLVE_TIMEOUT):
            addresses = await resolver(parsed.host, parsed.port)
    except TimeoutError:
        raise WebError(
            "WEB_PROVIDER_ERROR", f"resolving {parsed.host} took over {RESOLVE_TIMEOUT:g} s"
        ) from None
    except OSError as exc:
        raise WebError("WEB_PROVIDER_ERROR", f"cannot resolve {parsed.host}: {exc}") from None
    if not addresses:
        raise WebError("WEB_PROVIDER_ERROR", f"{parsed.host} has no address")
    return addresses
