from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator
from typing import Any, cast

import httpcore
import pytest

from tests.support.web_servers import PageServer


@pytest.fixture
def site() -> Iterator[PageServer]:
    with PageServer() as server:
        yield server


class RecordingNetwork(httpcore.AsyncNetworkBackend):
    """The socket boundary: records every connect; connects for real only to loopback (a test
    never sends traffic anywhere else), and refuses any other address as unreachable."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []
        self._real = cast(httpcore.AsyncNetworkBackend, httpcore.AnyIOBackend())

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        if not ipaddress.ip_address(host).is_loopback:
            raise httpcore.ConnectError(f"test network: {host} is unreachable")
        return await self._real.connect_tcp(host, port, timeout, local_address, socket_options)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise AssertionError("no unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._real.sleep(seconds)


class StubResolver:
    """DNS at its boundary: fixed answers per host name (a list of answers plays them in turn,
    the last one repeating), every question recorded."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        plays = self.answers[host]
        return plays.pop(0) if len(plays) > 1 else plays[0]


@pytest.fixture
def network() -> RecordingNetwork:
    return RecordingNetwork()
