from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.support.providers.helpers import KITS, Kit
from tests.support.providers.mock_llm_server import MockLLMServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


@pytest.fixture(params=KITS, ids=[k.name for k in KITS])
def kit(request: pytest.FixtureRequest) -> Kit:
    return request.param
