"""The agent, protocol-agnostic: sessions, the turn/round loop, tools pipeline, providers, store."""

import sys

# httpx's package imports its command-line client (`httpx._main`) whenever click can be imported
# (uvicorn, which the MCP SDK needs, brings click), and that client loads click, pygments and
# rich: 40-50 ms of every cold start, for a program tether never runs. A None entry in
# sys.modules makes that one import fail as a missing click would, which httpx handles (its
# `httpx.main` then says the CLI's dependencies are missing). Every httpx import in tether is
# under this package, so this runs first; anything that loaded httpx earlier keeps its own.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: not importable
