"""`initialize`: version negotiation and capabilities. Kept free of the engine and the event loop
so the first answer can go out before anything heavy is imported."""

from __future__ import annotations

import msgspec

from tether import __version__
from tether.schemas import acp

PROTOCOL_VERSION = 1


class InitializeMessage(msgspec.Struct):
    """A whole `initialize` request, for answering it before the JSON-RPC peer exists."""

    jsonrpc: str
    id: int | str
    method: str
    params: acp.InitializeRequest


class Handshake:
    def __init__(self) -> None:
        self.client: acp.ClientCapabilities | None = None
        self.client_info: acp.Implementation | None = None

    @property
    def done(self) -> bool:
        return self.client is not None

    def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        self.client = params.client_capabilities
        info = params.client_info
        self.client_info = info if isinstance(info, acp.Implementation) else None
        return acp.InitializeResponse(
            # We speak only v1: any other requested version is answered with ours.
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=acp.AgentCapabilities(
                load_session=False,
                prompt_capabilities=acp.PromptCapabilities(embedded_context=True),
                session_capabilities=acp.SessionCapabilities(list={}, close={}),
            ),
            auth_methods=[],
            agent_info=acp.Implementation(name="tether", version=__version__, title="tether"),
        )

    @property
    def notices(self) -> bool:
        return bool(self.client and self.client.session and self.client.session.notices is not None)

    @property
    def form_elicitation(self) -> bool:
        return bool(
            self.client and self.client.elicitation and self.client.elicitation.form is not None
        )
