"""The hand-written misbehaving MCP server of `hostile_stdio.py`, over streamable HTTP: each
POST answered with one JSON body (no session, no event stream), of either protocol era."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.mcp_servers.hostile_stdio import answer
from tests.support.mcp_servers.http_server import serving_app


@contextmanager
def serving_hostile(scenario: str, *, modern: bool) -> Iterator[str]:
    """Serve the scenario; yields its URL."""

    async def mcp(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405)  # no event stream, no session to delete
        reply = answer(scenario, json.loads(await request.body()), modern)
        return Response(status_code=202) if reply is None else JSONResponse(reply)

    app = Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST", "DELETE"])])
    with serving_app(app) as url:
        yield url
